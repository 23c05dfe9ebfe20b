"""The modules go to the workers longest first, by a record that names only modules there are."""
from pathlib import Path
from types import SimpleNamespace

from support import load_tool
from support.module_order import TEST_ROOT, longest_first, recorded_seconds


def items_of(*modules: str) -> list:
    """Two tests of each module, as pytest's items name their file."""
    return [SimpleNamespace(path=TEST_ROOT / module, name=f"{module}::test_{n}") for module in modules for n in (1, 2)]


def test_the_longest_module_goes_first_and_a_module_never_measured_before_it():
    seconds = {"a/test_short.py": 2.0, "a/test_long.py": 90.0, "b/test_middle.py": 15.0}
    order = longest_first(items_of("a/test_short.py", "b/test_new.py", "a/test_long.py", "b/test_middle.py"), seconds)
    assert [item.name for item in order] == [
        "b/test_new.py::test_1", "b/test_new.py::test_2", "a/test_long.py::test_1", "a/test_long.py::test_2",
        "b/test_middle.py::test_1", "b/test_middle.py::test_2", "a/test_short.py::test_1", "a/test_short.py::test_2"]


def test_a_module_outside_the_test_directory_goes_first_with_the_modules_never_measured(tmp_path):
    outside = [SimpleNamespace(path=tmp_path / "test_elsewhere.py", name="elsewhere")]
    order = longest_first([*items_of("a/test_long.py"), *outside], {"a/test_long.py": 90.0})
    assert [item.name for item in order] == ["elsewhere", "a/test_long.py::test_1", "a/test_long.py::test_2"]


def test_the_record_names_only_test_modules_there_are():
    record = recorded_seconds()
    assert record, "test/module_seconds.json is empty"
    missing = [module for module in record if not (TEST_ROOT / module).is_file()]
    assert not missing, f"the record names modules that are not there: {missing}"
    assert all(Path(module).name.startswith("test_") and seconds >= 0 for module, seconds in record.items())


def test_the_record_is_made_from_junit_reports_as_the_mean_of_whole_runs(tmp_path):
    reports = []
    for run, seconds in enumerate((3.0, 5.0)):
        report = tmp_path / f"run{run}.xml"
        report.write_text(
            '<testsuites><testsuite name="pytest">'
            f'<testcase classname="test.support.test_module_order" name="test_a" time="{seconds}"/>'
            '<testcase classname="test.support.test_module_order" name="test_b" time="1.0"/>'
            '<testcase classname="test.not_a_module" name="test_c" time="7.0"/>'
            '</testsuite></testsuites>')
        reports.append(report)
    assert load_tool("module_seconds").seconds_by_module(reports) == {"support/test_module_order.py": 5.0}
