"""The run record (ssebench/runrecord.py): one typed document per run, one writer, strict reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssebench import runrecord
from ssebench.runrecord import Outcome, RecordError, RunResult, RunSpec

ROOT = Path(__file__).resolve().parent.parent

SPEC = RunSpec(task_file="/tasks/demo/task.toml", task_id="demo", agent="claude", level=2)


def result(**changes: object) -> RunResult:
    base: dict[str, object] = {
        "spec": SPEC,
        "outcome": Outcome.FAILED,
        "reason": "failed: PoCs",
        "status": "checks_failed",
        "exit_code": 1,
        "passed": False,
        "task": runrecord.TaskRef(id="demo", file=SPEC.task_file, tree="/runs/x/tree"),
    }
    return RunResult(**{**base, **changes})  # type: ignore[arg-type]


def test_a_record_reads_back_equal_and_its_file_is_complete_json(tmp_path: Path) -> None:
    written = result(calls=(runrecord.CallRecord(number=1, level=2, ended="passed", outcome="passed", seconds=1.5),))
    path = runrecord.write(tmp_path, written)
    assert path == tmp_path / "results.json"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    data = json.loads(path.read_text("utf-8"))
    assert data["schema_version"] == 2 and data["outcome"] == "failed" and data["spec"]["agent"] == "claude"
    assert runrecord.read(tmp_path) == written
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file left


def test_a_version_1_file_is_one_error_naming_the_file_and_its_version(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"version": 1, "status": "passed"}))
    with pytest.raises(RecordError) as caught:
        runrecord.read(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'results.json'}: run record schema version 1, this ssebench reads version 2 "
        "(written by another ssebench; run it again with this one)"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "not a run record (a JSON list)"),
        ("{not json", "not JSON"),
        ('{"schema_version": 2, "outcome": "passed"}', "not a valid run record: spec: Field required"),
    ],
)
def test_a_foreign_file_is_one_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(RecordError, match="^" + str(tmp_path / "results.json") + ": ") as caught:
        runrecord.read(tmp_path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unknown_key_is_refused_not_dropped(tmp_path: Path) -> None:
    data = result().model_dump(mode="json")
    data["surprise"] = 1
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match="surprise: Extra inputs are not permitted"):
        runrecord.read(tmp_path)


def test_a_symlinked_record_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    runrecord.write(tmp_path, result())
    os.replace(tmp_path / "results.json", elsewhere)
    (tmp_path / "results.json").symlink_to(elsewhere)
    with pytest.raises(RecordError, match="cannot be read"):
        runrecord.read(tmp_path)


def test_no_record_yet_is_none_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    assert runrecord.read_if_any(tmp_path) is None
    with pytest.raises(RecordError, match="no run record here"):
        runrecord.read(tmp_path)


def test_every_status_has_one_outcome_and_only_infrastructure_and_cancelled_are_not_final() -> None:
    assert runrecord.outcome_of("passed") is Outcome.PASSED
    assert runrecord.outcome_of("checks_failed") is Outcome.FAILED
    assert runrecord.outcome_of("agent_failed") is Outcome.AGENT_ERROR
    assert runrecord.outcome_of("usage_error") is Outcome.USAGE
    assert runrecord.outcome_of("something new") is Outcome.INFRASTRUCTURE
    assert {o for o in Outcome if not o.final} == {Outcome.INFRASTRUCTURE, Outcome.CANCELLED}


def test_the_schema_in_docs_is_the_one_the_module_exports() -> None:
    assert (ROOT / runrecord.SCHEMA_DOC).read_text("utf-8") == runrecord.schema_text(), (
        "regenerate it: python -m ssebench.runrecord --schema > docs/run-record.schema.json"
    )


def test_never_called_is_a_fact_of_the_agent() -> None:
    facts = runrecord.AgentFacts(command=("claude",), exit_code=0, calls=0)
    assert result(agent=facts).never_called
    assert not result(agent=facts.model_copy(update={"calls": 3})).never_called
    assert not result().never_called  # no agent ran: nothing to say


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(
    outcome=st.sampled_from(list(Outcome)),
    reason=st.none() | _text,
    level=st.integers(0, 4),
    calls=st.integers(0, 1000),
    command=st.lists(_text, min_size=1, max_size=4).map(tuple),
)
def test_any_record_round_trips_through_its_json(
    outcome: Outcome, reason: str | None, level: int, calls: int, command: tuple[str, ...]
) -> None:
    spec = SPEC.model_copy(update={"level": level, "agent": None, "command": command})
    record = result(spec=spec, outcome=outcome, reason=reason, agent=runrecord.AgentFacts(command=command, calls=calls))
    raw = json.dumps(record.model_dump(mode="json")).encode()
    assert runrecord.parse(raw, "x") == record
