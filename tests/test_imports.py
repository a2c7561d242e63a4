"""A GPU, a model of your own and `--import`: reading, refusing, and the figures using them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuviz import app as cli
from gpuviz import catalog, imports
from gpuviz.data import DataError
from gpuviz.data.hardware import USER_GPUS, gpu_choices, hardware_dir
from gpuviz.data.models import USER_MODELS, load_models, model, model_choices
from gpuviz.imports.hf_config import parse_config
from gpuviz.models.memory import layer_weight_blocks
from gpuviz.models.profiling.mfu import matmul_parameters
from gpuviz.models.tensor_pipeline.tp_comm import layer_matmul_weights
from gpuviz.models.transformer import parameter_count

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
# Each built-in preset and the public config.json written for it (tests/data/hf_configs).
PRESET_CONFIGS = {"llama2_7b": "Llama-2-7b-hf", "llama2_70b": "Llama-2-70b-hf",
                  "llama3_8b": "Meta-Llama-3-8B", "llama3_70b": "Meta-Llama-3-70B",
                  "llama3_405b": "Llama-3.1-405B", "gpt3_xl": "GPT-3-XL",
                  "gpt3_6_7b": "GPT-3-6.7B", "gpt3_175b": "GPT-3-175B"}


@pytest.fixture(autouse=True)
def own_folder(tmp_path, monkeypatch):
    """The user's data folder in a throw-away place; nothing added outlives the test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    yield
    USER_GPUS.clear()
    USER_MODELS.clear()


def twin_h100(folder: Path, stem: str = "my_h100", **changes: str) -> Path:
    """The built-in H100's file under another id and name, with `changes` (a line's
    start -> the whole new line)."""
    lines = (hardware_dir() / "h100_sxm.toml").read_text().splitlines()
    lines = [next((new for start, new in changes.items() if line.startswith(start)), line)
             for line in lines]
    text = "\n".join(lines).replace('name = "H100 SXM 80 GB"', 'name = "My H100"')
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.toml"
    path.write_text(text + "\n")
    return path


# --- models ------------------------------------------------------------------------------
def test_every_builtin_preset_config_counts_as_the_preset():
    assert set(PRESET_CONFIGS) == set(load_models())
    for key, name in PRESET_CONFIGS.items():
        imported = imports.import_file(CONFIGS / f"{name}.json")
        assert imported.total_params == parameter_count(model(key)).total, name


@pytest.mark.parametrize("name, total", [
    ("Meta-Llama-3-8B", 8_030_261_248), ("Mistral-7B-v0.1", 7_241_732_096),
    ("Qwen2.5-7B", 7_615_616_512), ("gpt2", 124_439_808)])
def test_published_parameter_counts(name, total):
    imported = imports.import_file(CONFIGS / f"{name}.json")
    assert (imported.kind, imported.total_params, imported.active_params) == \
        ("model", total, total)


def test_mixtral_counts_every_expert_and_the_two_a_token_uses():
    """46.7B in all (Mistral AI's model card), 12.9B per token."""
    imported = imports.import_file(CONFIGS / "Mixtral-8x7B-v0.1.json")
    assert imported.total_params == 46_702_792_704
    assert imported.active_params == 12_879_925_248
    # 6.2's bars: each MLP matrix holds all 8 experts', the router joins the norms
    blocks = {b.name: b.count for b in layer_weight_blocks(model(imported.id))}
    assert blocks["gate"] == 8 * 4096 * 14336
    assert blocks["small"] == 2 * 4096 + 8 * 4096
    # what a token multiplies by: 9.3's layer weights and 13.3's N take two experts
    cfg = model(imported.id)
    assert layer_matmul_weights(cfg) == 4096 * (2 * 4096 + 2 * 1024) + 2 * 3 * 4096 * 14336
    assert matmul_parameters(cfg) == imported.active_params - 32000 * 4096


def test_qwen_moe_counts_the_shared_expert_and_the_gates():
    base = json.loads((CONFIGS / "Qwen2.5-7B.json").read_text())
    dense = parameter_count(parse_config(Path("dense.json"), base))
    moe = parameter_count(parse_config(Path("moe.json"), base | {
        "model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 18944, "shared_expert_intermediate_size": 18944}))
    h, mlp = 3584, 3 * 3584 * 18944
    # four experts and a shared one in place of one MLP, a router (h x 4) and a gate (h)
    assert moe.total - dense.total == 28 * (4 * mlp + h * 4 + h)
    assert moe.total - moe.active == 28 * 2 * mlp


def test_an_imported_model_joins_every_selector_marked_as_yours():
    imported = imports.import_file(CONFIGS / "Qwen2.5-7B.json")
    assert (imported.id, "Qwen2.5-7B (yours)") in model_choices()
    assert model(imported.id).qkv_bias


@pytest.mark.parametrize("change, needle", [
    ({"model_type": "bert"}, "field 'model_type': 'bert' is not a family gpuviz reads"),
    ({"num_hidden_layers": None}, "field 'num_hidden_layers': missing"),
    ({"hidden_size": -4096}, "field 'hidden_size': must be a whole number > 0, not -4096"),
    ({"num_key_value_heads": 5}, "field 'num_key_value_heads': 5 KV heads do not divide"),
    ({"attention_bias": True}, "field 'attention_bias': gpuviz models llama only with false"),
    ({"tie_word_embeddings": "no"}, "field 'tie_word_embeddings': must be true or false"),
])
def test_a_bad_config_is_one_line_naming_the_key(tmp_path, change, needle):
    data = json.loads((CONFIGS / "Meta-Llama-3-8B.json").read_text())
    data = {k: v for k, v in (data | change).items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError) as error:
        imports.import_file(path)
    assert needle in str(error.value) and "\n" not in str(error.value)
    assert str(path) in str(error.value)


def test_a_checkpoint_config_is_named_after_its_folder(tmp_path):
    folder = tmp_path / "My-Finetune-8B"
    folder.mkdir()
    shutil.copy(CONFIGS / "Meta-Llama-3-8B.json", folder / "config.json")
    imported = imports.import_file(folder / "config.json")
    assert (imported.id, imported.name) == ("my_finetune_8b", "My-Finetune-8B")


# --- GPUs --------------------------------------------------------------------------------
def test_a_gpu_twin_of_the_h100_gives_its_readouts_on_every_figure_with_a_gpu(tmp_path):
    """Every figure whose model has a `gpu` parameter: the user's copy of the H100 under
    another id and name gives the same numbers as the built-in one. Another GPU selector
    (2.4's faster GPU, 'next in the list' by default, and the twin is last) is pinned."""
    imported = imports.import_file(twin_h100(tmp_path))
    assert (imported.kind, imported.id) == ("gpu", "my_h100")
    assert ("my_h100", "My H100 (yours)") in gpu_choices()
    checked = 0
    for spec in catalog.all_figures():
        parameters = spec.make_model().parameters()
        if "gpu" not in parameters:
            continue
        others = {name: "h200_sxm" for name, p in parameters.items()
                  if name != "gpu" and "h200_sxm" in p.choice_values()}
        numbers = []
        for key in ("h100_sxm", "my_h100"):
            figure = cli.make_model(spec, {**others, "gpu": key})
            numbers.append({name: {k: v for k, v in r.json().items() if k != "text"}
                            for name, r in figure.readouts().items() if not r.name})
        assert numbers[0] == numbers[1], spec.number
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("changes, needle", [
    ({"clock_ghz": ""}, "field 'chip.clock_ghz': missing"),
    ({"hbm_gb": 'hbm_gb = { value = -80, source = "x" }'},
     "field 'chip.hbm_gb': value must be a positive number, not -80"),
    ({"hbm_gb": "hbm_gb = 80"}, "field 'chip.hbm_gb': must be a table"),
    ({"l2_bandwidth_tbs": 'l2_bandwidth = { value = 5.5, source = "x" }'},
     "field 'chip.l2_bandwidth': not a field gpuviz reads; the field names say their unit"),
    ({"bytes_in_flight_kb": ""}, "field 'sm.bytes_in_flight_kb': missing (every built-in"),
])
def test_a_bad_gpu_file_is_one_line_naming_the_field(tmp_path, changes, needle):
    path = twin_h100(tmp_path, **changes)
    with pytest.raises(DataError) as error:
        imports.import_file(path)
    assert needle in str(error.value) and "\n" not in str(error.value)
    assert str(path) in str(error.value)


def test_a_file_of_another_kind_or_a_builtin_id_is_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    with pytest.raises(DataError, match="neither a GPU TOML file"):
        imports.import_file(text)
    with pytest.raises(DataError, match="its id 'h100_sxm' is a built-in GPU's"):
        imports.import_file(hardware_dir() / "h100_sxm.toml")


def test_the_user_folder_comes_back_and_a_broken_file_is_left_out(tmp_path):
    added = imports.add_to_user_folder(twin_h100(tmp_path / "elsewhere"))
    imports.add_to_user_folder(CONFIGS / "Mistral-7B-v0.1.json")
    folder = imports.user_folder()
    assert (folder / "gpus" / "my_h100.toml").is_file()
    assert (folder / "models" / "Mistral-7B-v0.1.json").is_file()
    twin_h100(folder / "gpus", "broken", clock_ghz="")
    USER_GPUS.clear()
    USER_MODELS.clear()
    problems = imports.load_user_folder()
    assert [Path(p.path).name for p in problems] == ["broken.toml"]
    assert [e.summary() for e in imports.user_entries()] == [
        f"My H100 (GPU, id {added.id})",
        "Mistral-7B-v0.1 (model, id mistral_7b_v0_1): 7,241,732,096 parameters"]
    again = imports.add_to_user_folder(folder / "models" / "Mistral-7B-v0.1.json")
    assert again.id == "mistral_7b_v0_1"  # a file of the folder itself stays put
    imports.remove("gpu", "my_h100")
    assert not (folder / "gpus" / "my_h100.toml").exists()
    assert "my_h100" not in dict(gpu_choices())
    assert (tmp_path / "elsewhere" / "my_h100.toml").is_file()  # the original stays


# --- command line ------------------------------------------------------------------------
def test_import_alone_prints_what_each_file_holds(capsys, tmp_path):
    code = cli.main(["--import", str(CONFIGS / "Mixtral-8x7B-v0.1.json"),
                     "--import", str(twin_h100(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out) == [
        {"kind": "model", "id": "mixtral_8x7b_v0_1", "name": "Mixtral-8x7B-v0.1",
         "total_params": 46_702_792_704, "active_params": 12_879_925_248},
        {"kind": "gpu", "id": "my_h100", "name": "My H100"}]


def test_imported_files_serve_set_and_readout(capsys, tmp_path):
    code = cli.main(["--import", str(twin_h100(tmp_path)),
                     "--import", str(CONFIGS / "gpt2.json"), "--figure", "12.1",
                     "--set", "gpu=my_h100", "--set", "preset=gpt2", "--readout"])
    parameters = json.loads(capsys.readouterr().out)["parameters"]
    assert code == 0
    assert (parameters["gpu"], parameters["preset"]) == ("my_h100", "gpt2")


def test_a_bad_import_exits_2_with_one_line(capsys, tmp_path):
    path = twin_h100(tmp_path, clock_ghz="")
    code = cli.main(["--import", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"gpuviz: error: --import: {path}: field 'chip.clock_ghz': missing\n"


# --- the window ----------------------------------------------------------------------------
def test_the_window_adds_a_gpu_lists_it_in_preferences_and_removes_it(themed, qtbot,
                                                                       tmp_path):
    from PySide6.QtWidgets import QComboBox

    from gpuviz.main_window import MainWindow

    window = MainWindow("dark", remember=False)
    qtbot.addWidget(window)
    window.show_figure("2.1")
    assert not window.add_own_file("gpu", twin_h100(tmp_path / "bad", clock_ghz=""))
    assert "field 'chip.clock_ghz': missing" in window.messages[-1]
    assert window.add_own_file("gpu", twin_h100(tmp_path))
    combos = window.pages["2.1"].findChildren(QComboBox)
    assert any(combo.findText("My H100 (yours)") >= 0 for combo in combos)
    window.model("2.1").set("gpu", "my_h100")
    dialog = window.show_preferences()
    assert dialog.own.item(0).text() == "My H100 (GPU, id my_h100)"
    dialog.own.setCurrentRow(0)
    dialog.remove.click()
    assert dialog.own.item(0).text() == "None yet"
    assert window.model("2.1").get("gpu") == "h100_sxm"  # back to the default
    combos = window.pages["2.1"].findChildren(QComboBox)
    assert all(combo.findText("My H100 (yours)") < 0 for combo in combos)
    window.clock.stop()


def test_a_model_added_again_under_its_key_is_computed_afresh():
    """The models' caches keyed by a preset's key forget it when the user's models
    change: the second import's numbers are used, not the first's."""
    from dataclasses import replace

    from gpuviz.models.memory import training_memory
    from gpuviz.models.serving.long_prompt import prefill_polynomial

    base = model("llama2_7b")
    try:
        USER_MODELS.add("mine", replace(base, key="mine", layers=16))
        first = training_memory("mine", 1024, 1), prefill_polynomial("mine")
        USER_MODELS.add("mine", replace(base, key="mine", layers=32))
        second = training_memory("mine", 1024, 1), prefill_polynomial("mine")
        assert second[0].peak > first[0].peak and second[1] != first[1]
        assert second[0].peak == training_memory("llama2_7b", 1024, 1).peak
    finally:
        USER_MODELS.clear()
