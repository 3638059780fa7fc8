import pytest
import torch

# Tiny models run fastest on one thread, and the machine is shared with other jobs.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def no_user_tuned_settings(tmp_path_factory, monkeypatch):
    """Tests never read settings a user tuned on this machine (csd_lib.price.tuned): an empty store each."""
    from csd_lib import config
    monkeypatch.setattr(config, "TUNED_DIR", str(tmp_path_factory.mktemp("tuned")))


@pytest.fixture
def saved_checkpoints(tmp_path, monkeypatch):
    """Save random-weight checkpoints (one folder per size, vocab 48) and load offline from an empty cache.

    Call it as ``saved_checkpoints(arch, sizes, edit_tokenizer=None)``; returns the folders' paths.
    """
    from csd_lib import config
    from csd_lib.families.toy import toy_model, toy_tokenizer
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    monkeypatch.setattr(config, "DATA_DIR", None)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))

    def save(arch: str, sizes: list[str], edit_tokenizer=None) -> list[str]:
        paths = []
        for i, size in enumerate(sizes):
            d = tmp_path / size
            toy_model(arch, 48, size, i, torch.float32).save_pretrained(d)
            tok = toy_tokenizer(48, arch == "t5")
            if edit_tokenizer:
                edit_tokenizer(size, tok)
            tok.save_pretrained(d)
            paths.append(str(d))
        return paths
    return save
