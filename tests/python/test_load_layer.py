"""load_layer: the canonical parameters as NumPy views, decoded here from the layouts documented in
docs/spec_ids.md and held against each producer library's own dequantization
(tests/data/producers/*/dequant.safetensors, written by compressed-tensors / llmcompressor), and
Linear.forward against a float64 product and against `quantpath run` bit for bit."""

import json

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import quantpath
from conftest import EXAMPLE, PRODUCERS

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def nibbles(packed, cols):
    """uint8 [N, ceil(cols/2)] → codes [N, cols], the even element in the low nibble."""
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(packed.shape[0], -1)
    return codes[:, :cols].astype(np.int64)


def per_group(values, cols):
    """[N, G] → [N, cols]: each of G groups spans cols / G columns."""
    return np.repeat(values, cols // values.shape[1], axis=1)


def int_group(p, cols):
    q = nibbles(p["weight"], cols)
    scale = p["weight_scale"].astype(np.float64)
    zero = nibbles(p["weight_zero_point"], scale.shape[1]) if "weight_zero_point" in p else 8
    zero = per_group(zero, cols) if not np.isscalar(zero) else zero
    return (q - zero) * per_group(scale, cols)


def nvfp4(p, cols):
    values = E2M1[nibbles(p["weight"], cols)]
    scale = per_group(p["weight_scale"].astype(np.float64), cols)
    return values * scale * np.float64(p["weight_global_scale"][0, 0])


def mxfp4(p, cols):
    return E2M1[nibbles(p["weight"], cols)] * per_group(p["weight_scale"].astype(np.float64), cols)


def int8_channel(p, cols):
    assert p["weight"].dtype == np.uint8  # unsigned codes, zero point 2^(8-1)
    return (p["weight"].astype(np.float64) - 128) * p["weight_scale"].astype(np.float64)


CASES = {  # fixture: (spec id, decoder of the canonical parameters)
    "ct_llama_w4a16_g64_sym": ("int4_group_64", int_group),
    "ct_llama_w4a16_g64_asym": ("int4_group_64_zp", int_group),
    "ct_llama_nvfp4a16": ("nvfp4_block_16_linear", nvfp4),
    "ct_llama_mxfp4a16": ("mxfp4_block_32", mxfp4),
    "ct_llama_w8a8_int8_dynamic": ("int8_channel", int8_channel),
}
LAYER = "model.layers.1.mlp.down_proj"


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_parameters_decode_to_the_producers_dequantization(fixture):
    spec_id, decode = CASES[fixture]
    layer = quantpath.load_layer(PRODUCERS / fixture, LAYER)
    assert layer.path == LAYER
    assert layer.spec_id.startswith(spec_id), layer.spec_id
    reference = load_file(str(PRODUCERS / fixture / "dequant.safetensors"))[LAYER + ".weight"]
    ours = decode(layer.parameters, layer.linear.in_features)
    assert ours.shape == reference.shape == (layer.linear.out_features, layer.linear.in_features)
    # The producer saves its dequantization in the model's dtype: round ours the same way.
    np.testing.assert_array_equal(ours.astype(reference.dtype), reference)


def test_parameters_are_read_only_views_that_keep_the_layer_alive():
    layer = quantpath.load_layer(EXAMPLE, "model.layers.0.mlp.down_proj")
    weight = layer.parameters["weight"]
    assert weight.dtype == ml_dtypes.float8_e4m3fn and weight.shape == (256, 512)
    assert not weight.flags.writeable and not weight.flags.owndata
    with pytest.raises(ValueError):
        weight[0, 0] = 0
    # The canonical fp8 weight is the checkpoint's tensor, byte for byte.
    stored = raw_tensor(EXAMPLE / "model.safetensors", "model.layers.0.mlp.down_proj.weight")
    assert weight.tobytes() == stored
    del layer
    assert float(np.abs(weight.astype(np.float32)).max()) > 0  # still valid


def raw_tensor(path, name):
    """A tensor's bytes, read by the safetensors format's definition (an 8-byte little-endian header
    length, the JSON header, then the data; offsets relative to the data), for dtypes the
    safetensors package's NumPy side does not read (F8_E4M3)."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    begin, end = json.loads(data[8:8 + length])[name]["data_offsets"]
    return data[8 + length + begin:8 + length + end]


def fp8_block(p, cols):
    scale = np.repeat(np.repeat(p["weight_scale"].astype(np.float64), 128, axis=0), 128, axis=1)
    w = p["weight"].astype(np.float64)
    return w * scale[: w.shape[0], :cols]


def test_forward_is_the_product_with_the_dequantized_weight():
    layer = quantpath.load_layer(EXAMPLE, "model.layers.0.mlp.down_proj")
    w = fp8_block(layer.parameters, layer.linear.in_features)
    x = np.random.default_rng(7).standard_normal((5, layer.linear.in_features)).astype(np.float32)
    # The fp8 block spec quantizes activations per token group of 128 to e4m3 first, as the
    # engines do: the product with unquantized x agrees to the activation's rounding.
    y = layer.linear.forward(x)
    expected = x.astype(np.float64) @ w.T
    assert y.dtype == np.float32 and y.shape == (5, layer.linear.out_features)
    assert np.abs(y - expected).max() <= 0.07 * np.abs(expected).max()
    np.testing.assert_array_equal(layer.linear.forward(x[2]), y[2])


def test_forward_takes_bfloat16_and_refuses_other_dtypes():
    layer = quantpath.load_layer(PRODUCERS / "ct_llama_w4a16_g64_sym", LAYER)
    x = np.random.default_rng(3).standard_normal((3, layer.linear.in_features))
    x16 = x.astype(ml_dtypes.bfloat16)
    expected = x16.astype(np.float64) @ int_group(layer.parameters, layer.linear.in_features).T
    y = layer.linear.forward(x16)
    assert np.abs(y - expected).max() <= 1e-5 * np.abs(expected).max()
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        layer.linear.forward(x)  # float64
    with pytest.raises(quantpath.Error):
        layer.linear.forward(np.zeros((2, 7), np.float32))  # K does not match
    assert layer.linear.forward(np.zeros((0, layer.linear.in_features), np.float32)).shape == (
        0, layer.linear.out_features)
    assert layer.linear.kernel(1, "bf16")


def test_int8_activations_quantize_x_per_token():
    # int8_activations=True (--int8-activations): X rounded per row to int8 codes (absmax / 127,
    # ties to even), each group's integer sum scaled by its weight scale, the row by its own.
    folder = PRODUCERS / "ct_llama_w4a16_g64_asym"
    layer = quantpath.load_layer(folder, LAYER, int8_activations=True)
    exact = quantpath.load_layer(folder, LAYER)
    cols = layer.linear.in_features
    x = np.random.default_rng(5).standard_normal((3, cols)).astype(np.float32)
    absmax = np.abs(x).max(axis=1, keepdims=True)
    codes = np.clip(np.rint(x * (np.float32(127) / absmax)), -128, 127).astype(np.float64)
    p = layer.parameters
    q = nibbles(p["weight"], cols)
    zero = per_group(nibbles(p["weight_zero_point"], p["weight_scale"].shape[1]), cols)
    scale = p["weight_scale"].astype(np.float64)
    groups = scale.shape[1]
    sums = (codes[:, None, :] * (q - zero)[None, :, :]).reshape(3, q.shape[0], groups, -1).sum(-1)
    expected = (absmax / 127).astype(np.float64) * (sums * scale[None]).sum(-1)
    y = layer.linear.forward(x)
    assert np.abs(y - expected).max() <= 1e-5 * np.abs(expected).max()
    # Near the exact product, not equal to it.
    y_exact = exact.linear.forward(x)
    assert 0 < np.abs(y - y_exact).max() <= 1e-2 * np.abs(y_exact).max()


def test_forward_equals_quantpath_run_bit_for_bit(cli, tmp_path):
    folder = PRODUCERS / "ct_llama_nvfp4a16"
    layer = quantpath.load_layer(folder, LAYER)
    x = np.random.default_rng(11).standard_normal((4, layer.linear.in_features)).astype(np.float32)
    save_file({"x": x}, str(tmp_path / "x.safetensors"))
    cli("run", folder, "--layer", LAYER, "--input", tmp_path / "x.safetensors",
        "--output", tmp_path / "y.safetensors", expect=(0, 1))
    np.testing.assert_array_equal(layer.linear.forward(x), load_file(str(tmp_path / "y.safetensors"))["y"])


def test_a_rank_holds_its_shard():
    whole = quantpath.load_layer(PRODUCERS / "ct_llama_w4a16_g64_sym", "model.layers.0.mlp.gate_up_proj")
    rank1 = quantpath.load_layer(PRODUCERS / "ct_llama_w4a16_g64_sym",
                                 "model.layers.0.mlp.gate_up_proj", tp=2, rank=1)
    n = whole.linear.out_features
    assert rank1.linear.out_features == n // 2
    # Column-parallel: rank 1 holds the second half of each fused leg (gate, then up).
    half = n // 4
    expected = np.concatenate([whole.parameters["weight"][half:2 * half],
                               whole.parameters["weight"][3 * half:]])
    np.testing.assert_array_equal(rank1.parameters["weight"], expected)
    with pytest.raises(quantpath.Error, match="rank"):
        quantpath.load_layer(PRODUCERS / "ct_llama_w4a16_g64_sym",
                             "model.layers.0.mlp.gate_up_proj", tp=2, rank=2)
