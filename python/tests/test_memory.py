"""Running out of memory raises MemoryError, never aborts the interpreter.

Each case runs in a child interpreter whose address space is capped
(RLIMIT_AS) at what it uses after the imports plus 256 MiB, so the
allocations fail at once and a failure cannot take the test runner down:
an abort shows as a negative return code (SIGABRT) instead of the
``MemoryError`` line the child prints.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status: Linux"
)

PRELUDE = """
import resource
import sys
import numpy as np
import scipy.sparse as sp
import tocpile

def address_space():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

cap = address_space() + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
try:
    {body}
except MemoryError as e:
    print("MemoryError:", e)
"""


def run_capped(body, **paths):
    code = PRELUDE.format(body=textwrap.indent(textwrap.dedent(body), "    ").strip())
    args = [sys.executable, "-c", code, *[str(p) for p in paths.values()]]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"the interpreter died ({out.returncode}): {out.stderr[-2000:]}"
    assert "MemoryError:" in out.stdout, out.stdout + out.stderr[-2000:]
    return out.stdout


def test_to_dense_of_a_large_batch():
    # 100,000 x 4,000 float64: 3.2 GB dense, from an empty sparse matrix.
    run_capped("tocpile.TocBatch(sp.csr_matrix((100_000, 4_000))).to_dense()")


def test_dense_read_of_a_large_file(tmp_path):
    # 100,000 rows of 2,000 columns, one entry each: a small file, 1.6 GB
    # dense.
    n, width = 100_000, 2_000
    X = sp.csr_matrix((np.ones(n), (np.arange(n), np.arange(n) % width)), shape=(n, width))
    path = tmp_path / "wide.toc"
    tocpile.encode(X, np.zeros(n), path, scale=None)
    out = run_capped("tocpile.Dataset(sys.argv[1]).read(as_='dense')", path=path)
    assert "MemoryError" in out


def test_training_a_model_too_large_for_memory(tmp_path):
    # softmax over 2,000 columns and 30,000 classes: 60 million parameters
    # (within the library's parameter limit), 480 MB of weights alone.
    rng = np.random.default_rng(0)
    X = sp.random(200, 2_000, density=0.01, format="csr", random_state=rng)
    path = tmp_path / "train.toc"
    tocpile.encode(X, np.arange(200) % 2, path)
    out = run_capped(
        "tocpile.train(sys.argv[1], 'softmax', classes=30_000, epochs=1)",
        path=path,
    )
    assert "not enough memory" in out


def test_allocations_within_the_cap_still_work():
    # The same child with a small batch: the cap is not what fails.
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE.format(
            body="print(tocpile.TocBatch(sp.csr_matrix((10, 4))).to_dense().shape)")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0 and "(10, 4)" in out.stdout, out.stderr
