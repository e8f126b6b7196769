"""The fault index file: the shipped one is valid, and a file whose parts do not fit together is refused with
the file's name and a fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from faultline.errors import FaultlineError
from faultline.sade.index_file import load_index
from faultline.sade.scans import CHECKS_BY_NAME
from faultline.sade.skills import SKILLS_DIR


def test_the_shipped_index_names_known_kinds_checks_and_families() -> None:
    index = load_index()
    assert index.service_symptoms <= set(index.symptoms)
    assert set(index.pressure_sweep.checks) <= set(CHECKS_BY_NAME)
    assert index.roles.infrastructure == {"router", "switch"}


def _edited(tmp_path: Path, edit) -> Path:
    """A copy of the skills library whose index.yml went through `edit` (a function of its parsed data)."""
    folder = tmp_path / "skills"
    shutil.copytree(SKILLS_DIR, folder)
    data = yaml.safe_load((folder / "index.yml").read_text())
    edit(data)
    (folder / "index.yml").write_text(yaml.safe_dump(data))
    return folder / "index.yml"


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d["pressure_sweep"]["checks"].append("uptime"), "checks ['uptime'] are not checks"),
    (lambda d: d["triage"].update(host_flapping="interfaces"), "symptom kinds ['host_flapping']"),
    (lambda d: d["service_symptoms"].append("service_gone"), "symptom kinds ['service_gone']"),
    (lambda d: d["roles"]["service"].append("router"), "roles ['router'] are both"),
    (lambda d: d["ticket"][0]["words"].append("(unclosed"), "is no regular expression"),
    (lambda d: d.update(max_suspects=3), "max_suspects"),
    (lambda d: d["symptoms"]["unstable"].append("qos"), "families ['qos'] have no skill"),
])
def test_an_index_whose_parts_do_not_fit_is_refused_with_the_file_and_a_fix(tmp_path: Path, edit, said) -> None:
    path = _edited(tmp_path, edit)
    with pytest.raises(FaultlineError) as err:
        load_index(path)
    assert str(path) in err.value.message and said in err.value.message
    assert err.value.fix
