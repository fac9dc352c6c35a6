"""plan, explain and check from Python equal the CLI's --json on the example and the producers'
fixtures; errors are quantpath.Error with the CLI's message."""

import pytest

import quantpath
from conftest import EXAMPLE, PRODUCERS

FOLDERS = [EXAMPLE] + [PRODUCERS / name for name in (
    "ct_llama_w4a16_g64_asym", "ct_llama_nvfp4", "bnb_llama_nf4_dq", "bf16_qwen3moe",
    "ar_llama_auto_gptq_w4g64_sym")]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_plan_is_the_cli_json(folder, cli):
    assert quantpath.plan(folder) == cli("plan", folder, "--json", expect=(0, 1))


@pytest.mark.parametrize("engine,resolved", [("vllm", "vllm@0.34"), ("sglang@0.5.23", "sglang@0.5.23")])
def test_plan_takes_the_cli_options(engine, resolved, cli):
    folder = PRODUCERS / "ct_llama_nvfp4"
    ours = quantpath.plan(folder, engine=engine, device="sm100", tp=2)
    assert ours == cli("plan", folder, "--engine", engine, "--device", "sm100", "--tp", "2",
                       "--json", expect=(0, 1))
    assert ours["engine"] == resolved  # an engine's bare name is its newest release


def test_plan_takes_the_engines_platform(cli):
    folder = PRODUCERS / "ct_llama_w4a16_g64_asym"
    ours = quantpath.plan(folder, engine="sglang", platform="cpu-amx")
    assert ours == cli("plan", folder, "--engine", "sglang", "--platform", "cpu-amx", "--json",
                       expect=(0, 1))
    assert ours["platform"] == "cpu-amx"
    with pytest.raises(quantpath.Error, match="reproduces vllm@0.33 on cuda only"):
        quantpath.plan(folder, engine="vllm@0.33", platform="cpu")


def test_explain_is_the_cli_json(cli):
    layer = "model.layers.1.self_attn.q_proj"
    ours = quantpath.explain(EXAMPLE, layer)
    assert ours == cli("explain", EXAMPLE, layer, "--json")
    assert ours["decision"]["kind"] == "quantized"


def untimed(report):
    """A check report without its timings, which differ from run to run."""
    return {k: v for k, v in report.items() if k not in ("read_seconds", "gb_per_s")}


def test_check_is_the_cli_json(cli):
    folder = PRODUCERS / "ct_llama_w4a16_g64_asym"
    ours = quantpath.check(folder)
    theirs = cli("check", folder, "--json")
    assert untimed(ours) == untimed(theirs) and ours["errors"] == 0 and ours["tensors"] > 0
    assert ours["reads"] == "values" and ours["bytes_read"] > 0


def test_check_modes_are_the_cli_flags(cli):
    folder = PRODUCERS / "ct_llama_w4a16_g64_asym"
    headers = quantpath.check(folder, headers_only=True)
    assert untimed(headers) == untimed(cli("check", folder, "--headers-only", "--json"))
    assert headers["reads"] == "headers" and headers["bytes_read"] == 0
    assert headers["gb_per_s"] is None
    deep = quantpath.check(folder, deep=True)
    assert untimed(deep) == untimed(cli("check", folder, "--deep", "--json"))
    assert deep["reads"] == "every-byte" and deep["bytes_read"] > quantpath.check(folder)["bytes_read"]
    with pytest.raises(ValueError, match="exclude each other"):
        quantpath.check(folder, headers_only=True, deep=True)


def test_errors_carry_the_cli_message(cli, tmp_path):
    done = cli("plan", tmp_path / "absent", expect=(2,))
    with pytest.raises(quantpath.Error) as error:
        quantpath.plan(tmp_path / "absent")
    assert isinstance(error.value, ValueError)
    assert done.stderr.strip() == f"quantpath: {error.value}"
    with pytest.raises(quantpath.Error, match="unknown device 'sm70'"):
        quantpath.plan(EXAMPLE, device="sm70")


def test_version_is_the_cli_version(cli):
    assert cli("--version").stdout.strip() == f"quantpath {quantpath.__version__}"
