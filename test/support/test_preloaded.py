"""support/preloaded.py: a command forked from the fork server is a process of its own, as
``python -m MODULE`` started from scratch would be, and reads its environment when it imports."""
import json
import os
import signal
import subprocess

import pytest

from support import preloaded
from support.waiting import WAIT

PROBE = '''
import json, os, resource, sys, time
said = {"open_files": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "pid": os.getpid(), "argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("PROBE_MARKER"),
        "stdin": sys.stdin.read(), "main": __name__, "seen_at_import": SEEN}
print(json.dumps(said), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if "--wait" in sys.argv:
    time.sleep(60)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
'''


@pytest.fixture
def probe_dir(tmp_path):
    """A directory with the module ``probe`` (``python -m probe`` in it) and the module it
    imports, ``import_time_reader``, which reads ``PROBE_MARKER`` when it is imported."""
    (tmp_path / "import_time_reader.py").write_text("import os\nSEEN = os.environ.get('PROBE_MARKER')\n")
    (tmp_path / "probe.py").write_text("from import_time_reader import SEEN\n" + PROBE)
    return tmp_path


def run_probe(probe_dir, *argv, input="", open_files=None, **env):
    proc = preloaded.start("probe", list(argv), env={**os.environ, **env}, cwd=str(probe_dir), text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           open_files=open_files)
    out, err = proc.communicate(input, timeout=WAIT)
    return proc, json.loads(out), err


def test_a_forked_command_has_its_own_process_arguments_environment_directory_streams_limits_and_status(probe_dir):
    proc, said, err = run_probe(probe_dir, "one", "two words", input="typed", open_files=99,
                                PROBE_MARKER="m-1", PROBE_EXIT="3")
    assert isinstance(proc, preloaded.PreloadedProcess)  # not the plain process it falls back to
    assert said == {"open_files": 99, "pid": proc.pid, "argv": ["one", "two words"], "cwd": str(probe_dir), "marker": "m-1",
                    "stdin": "typed", "main": "__main__", "seen_at_import": "m-1"}
    assert proc.pid != os.getpid() and err == "to stderr\n" and proc.returncode == 3


def test_each_forked_command_imports_with_its_own_environment(probe_dir):
    said = [run_probe(probe_dir, PROBE_MARKER=marker)[1] for marker in ("first", "second")]
    assert [each["seen_at_import"] for each in said] == ["first", "second"]
    assert said[0]["open_files"] == said[1]["open_files"] != 99  # a limit is the command's own


def test_a_forked_command_leaves_the_preloaded_libraries_out_of_its_collections(tmp_path):
    """Its garbage collections do not walk (and so do not copy) the fork server's objects."""
    (tmp_path / "frozen.py").write_text("import gc\nprint(gc.get_freeze_count())\n")
    proc = preloaded.start("frozen", [], env=dict(os.environ), cwd=str(tmp_path), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=WAIT)
    assert isinstance(proc, preloaded.PreloadedProcess) and proc.returncode == 0, err
    assert int(out) > 50_000, out  # the objects of the preloaded libraries that a collection walks (96,000 here)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signalled_forked_command_ends_by_that_signal(probe_dir, sig):
    proc = preloaded.start("probe", ["--wait"], env=dict(os.environ), cwd=str(probe_dir),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert json.loads(proc.stdout.readline())["pid"] == proc.pid  # it runs
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    proc.send_signal(sig)
    assert proc.wait(timeout=WAIT) == -sig


def test_a_command_whose_interpreter_would_start_otherwise_gets_a_plain_process(probe_dir):
    other_path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(probe_dir / "elsewhere")]))
    proc = preloaded.start("probe", [], env={**os.environ, "PYTHONPATH": other_path}, cwd=str(probe_dir),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out, _ = proc.communicate(timeout=WAIT)
    assert isinstance(proc, subprocess.Popen) and json.loads(out)["pid"] == proc.pid and proc.returncode == 0
    fresh = preloaded.start("probe", [], env=dict(os.environ), cwd=str(probe_dir), fresh=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert isinstance(fresh, subprocess.Popen) and fresh.wait(WAIT) == 0
