"""Checks a PNG Chromium rendered from `plan --svg` against the SVG (the PNG decoded here, with
zlib): its size is the SVG's, and inside each cell the SVG draws, the pixel at the cell's centre
row, just right of its label area's start, has the cell's fill (a scheme's colour, the white of an
error, the hatching's greys), and an error cell's outline is the error red.

Usage: png_colours.py SVG PNG | png_colours.py --size-only PNG WIDTH HEIGHT
"""
import re
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    pixel = lambda x, y: tuple(rows[y][x * channels:x * channels + 3])
    return width, height, pixel


def hex_colour(text):
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


def near(a, b, slack=12):
    return all(abs(x - y) <= slack for x, y in zip(a, b))


def main(argv):
    if argv[0] == "--size-only":
        width, height, _ = decode(argv[1])
        assert (width, height) == (int(argv[2]), int(argv[3])), (width, height)
        return 0
    svg = open(argv[0], encoding="utf-8").read()
    width, height, pixel = decode(argv[1])
    size = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg)
    assert (width, height) == (int(size[1]), int(size[2])), (width, height, size.groups())
    cells = re.findall(r'<g class="site"[^>]*data-scheme="([^"]*)"[^>]*>.*?<rect class="cell" '
                       r'x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" rx="3" fill="([^"]*)" '
                       r'stroke="([^"]*)"', svg)
    assert cells, "no cells in the SVG"
    seen = set()
    for scheme, x, y, w, h, fill, stroke in cells:
        x, y, w, h = int(x), int(y), int(w), int(h)
        if fill.startswith("#"):
            # The fill between the label's end and the cell's right edge.
            got = pixel(x + w - 3, y + h // 2)
            assert near(got, hex_colour(fill)), (scheme, x, y, got, fill)
        else:  # the hatching: greys only
            got = {pixel(x + w - 3 - i, y + h // 2) for i in range(6)}
            assert all(near(g, (g[0],) * 3, 4) and g[0] > 150 for g in got), (scheme, got)
        if scheme == "error":
            got = pixel(x, y + h // 2)
            assert near(got, hex_colour(stroke), 40), ("error outline", x, y, got)
        seen.add(scheme)
    assert "error" in seen and "unquantized" in seen and len(seen) >= 3, seen
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
