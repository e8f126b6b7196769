"""The deterministic pre-fetch reranker: its hybrid-rank prior, same-field similarity and vector cache.

A small bag-of-words embedder stands in for MiniLM so the tests are fast and their vectors predictable.
"""

from __future__ import annotations

import json
import re
import zlib

import numpy as np
import pytest

DIM = 256


class BagOfWords:
    """Hashes each word into a dimension; counts how many texts it was asked to embed."""

    model_name = "test-bag-of-words"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % DIM] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


@pytest.fixture
def reranker():
    from faultline.astra.rerank import LexicalReranker, clear_vector_cache
    from faultline.config import Settings

    clear_vector_cache()
    yield LexicalReranker(Settings(), embedder=BagOfWords())
    clear_vector_cache()


def _cand(tid, title, description="", rank=0, score=0.0):
    from faultline.astra.rerank import Candidate

    return Candidate(ticket_id=tid, title=title, description=description, resolution_note="", components=[],
                     resolved_at=None, hybrid_score=score, hybrid_rank=rank)


def _incident(title, description=""):
    from faultline.astra.records import Incident

    return Incident(incident_id="INC-1", title=title, description=description)


def test_each_history_ticket_is_embedded_once_per_process(reranker):
    batch = [_cand(f"T-{n}", f"bgp session flaps on router{n}", rank=n + 1) for n in range(5)]
    reranker.score(_incident("bgp session down"), batch)
    reranker.score(_incident("ospf adjacency stuck in exstart"), batch)
    titles = [c.title for c in batch]
    assert sorted(t for t in reranker.embedder.embedded if t in titles) == sorted(titles)
    # an edited ticket is embedded again, the others are not
    batch[2].title = "bgp session flaps on router2 after upgrade"
    reranker.embedder.embedded.clear()
    reranker.score(_incident("bgp session down"), batch)
    assert reranker.embedder.embedded == ["bgp session down", batch[2].title]


def test_the_cache_returns_the_vectors_the_model_gives(reranker):
    from faultline.astra.rerank import cached_vectors

    fresh = BagOfWords()
    items = [("T-1", "interface eth0 down"), ("T-2", "mtu mismatch on eth1")]
    first = cached_vectors(reranker.embedder, items)
    again = cached_vectors(reranker.embedder, list(reversed(items)))
    assert np.allclose(np.stack(first), fresh.embed([t for _, t in items]))
    assert np.allclose(again[0], first[1]) and np.allclose(again[1], first[0])


def test_equal_evidence_keeps_the_hybrid_order(reranker):
    batch = [_cand(f"T-{n}", "dns resolution fails", rank=n + 1) for n in range(4)]
    scores = reranker.score(_incident("dns resolution fails"), batch)
    assert [scores[f"T-{n}"] for n in range(4)] == sorted(scores.values(), reverse=True)
    assert len(set(scores.values())) == 4 and all(0.0 <= s <= 1.0 for s in scores.values())


def test_titles_are_compared_with_titles(reranker):
    """A long incident description must not drown the title match (the old query-vs-title asymmetry)."""
    incident = _incident("quorum lost after leader election",
                         "the cluster logs show many stack traces about socket timeouts in the client library " * 5)
    same_topic = _cand("T-1", "quorum lost after leader election", rank=2)
    echoes_log = _cand("T-2", "socket timeouts in the client library stack traces", rank=2)
    sig = reranker.signals(incident, [same_topic, echoes_log])
    assert sig["T-1"]["embedding"] == pytest.approx(1.0, abs=1e-5)
    assert sig["T-1"]["embedding"] > sig["T-2"]["embedding"]


def test_without_a_rank_the_hybrid_score_is_the_prior(reranker):
    batch = [_cand("T-1", "x", score=0.9), _cand("T-2", "x", score=0.1)]
    sig = reranker.signals(_incident("y"), batch)
    assert sig["T-1"]["hybrid"] == pytest.approx(0.9) and sig["T-2"]["hybrid"] == pytest.approx(0.1)


# --- the LLM reranker, when ASTRA runs with a model ------------------------------------------------


def _batch():
    return [_cand("T-1", "BGP session down after ACL change", rank=1, score=0.9),
            _cand("T-2", "printer out of toner", rank=2, score=0.8),
            _cand("T-3", "BGP neighbour stuck in Active", rank=3, score=0.7)]


def test_the_deterministic_reranker_is_the_default_even_with_a_model(settings, conn):
    from faultline.astra.rerank import LexicalReranker, make_reranker

    assert isinstance(make_reranker(settings, conn, "openai/gpt-4o-mini", embedder=BagOfWords()), LexicalReranker)
    chosen = settings.model_copy(update={"astra_reranker": "llm"})
    assert isinstance(make_reranker(chosen, conn, None, embedder=BagOfWords()), LexicalReranker)  # no model


def test_the_llm_reranker_orders_by_the_models_scores_and_logs_its_call(settings, conn):
    from faultline.astra.prefetch import rerank
    from faultline.astra.rerank import LLMReranker, make_reranker
    from faultline.llm.fake import scripted_model

    reply = json.dumps({"scores": [{"ticket_id": "T-3", "score": 0.9, "reason": "same symptom"},
                                   {"ticket_id": "T-1", "score": 0.4, "reason": "same protocol"},
                                   {"ticket_id": "T-9", "score": 1.0, "reason": "invented"}]})
    chosen = settings.model_copy(update={"astra_reranker": "llm", "astra_rerank_keep": 3})
    with scripted_model("rerank-ok", [reply]) as fake:
        ranker = make_reranker(chosen, conn, fake.model, embedder=BagOfWords(), incident_id="INC-1", run_id="R-rr")
        assert isinstance(ranker, LLMReranker)
        kept = rerank(chosen, _incident("BGP down on router2"), _batch(), ranker)
    assert [(c.ticket_id, s) for c, s in kept] == [("T-3", 0.9), ("T-1", 0.4), ("T-2", 0.0)]  # T-9 ignored
    assert not ranker.fallbacks
    assert conn.execute("SELECT count(*) FROM llm_calls WHERE stage = 'astra.rerank' AND run_id = 'R-rr' "
                        "AND error IS NULL").fetchone()[0] == 1


def test_a_batch_whose_model_fails_is_reranked_deterministically_and_says_so(settings, conn):
    from faultline.astra.prefetch import rerank
    from faultline.astra.rerank import make_reranker
    from faultline.llm.fake import scripted_model

    chosen = settings.model_copy(update={"astra_reranker": "llm", "astra_rerank_keep": 3, "llm_retries": 0,
                                         "llm_backoff_s": 0.0})
    with scripted_model("rerank-prose", ["These all look relevant to me."], repeat_last=True) as fake:
        ranker = make_reranker(chosen, conn, fake.model, embedder=BagOfWords())
        kept = rerank(chosen, _incident("BGP session down after ACL change"), _batch(), ranker)
    assert kept[0][0].ticket_id == "T-1" and all(s > 0 for _, s in kept)  # the lexical scores, not zeros
    (said,) = ranker.fallbacks
    assert said.startswith("reranker: model failed: ") and "reranked by the deterministic reranker" in said


class CharModel:
    """A model of single characters that scores each by a fixed wish list, whatever it has read."""

    def __init__(self, wishes: dict[str, float]) -> None:
        from faultline.llm.guided import Vocabulary

        self.pieces = [chr(c) for c in range(32, 127)] + ["<end>"]
        end = len(self.pieces) - 1
        self.vocabulary = Vocabulary(self.pieces, frozenset({end}), frozenset({end}))
        self.scores = np.array([wishes.get(p, 0.0) for p in self.pieces], dtype=np.float32)

    def encode(self, text: str) -> list[int]:
        return [self.pieces.index(ch) for ch in text]

    def feed(self, ids: list[int]) -> np.ndarray:
        return self.scores


def test_a_grammar_writes_one_score_per_candidate_in_order_whatever_the_model_wants():
    from faultline.astra.rerank import GUIDE_SCORES, RerankAnswer, batch_guide
    from faultline.llm.guided import Decoder, write_json

    model = CharModel({"T": 9, "9": 8, "]": 7, "}": 6, "1": 5})  # would rather invent T-9 and stop at once
    decoder = Decoder(model, max_tokens=400)
    decoder.start([0])
    answer = RerankAnswer.model_validate_json(write_json(decoder, batch_guide(_batch())))
    assert [s.ticket_id for s in answer.scores] == ["T-1", "T-2", "T-3"]
    assert all(s.score in GUIDE_SCORES for s in answer.scores)
    assert [s.score for s in answer.scores] == [1.0, 1.0, 1.0]  # where it may choose, it chose its "1"
