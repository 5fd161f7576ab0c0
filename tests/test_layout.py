"""The test tree itself: pytest imports test files by basename (tests/ has no packages),
and the simulator process collects tests/cuda, tests/ops and tests/nn together, so two
test files with one name would shadow each other."""
import collections
import pathlib


def test_test_file_names_are_unique():
    root = pathlib.Path(__file__).parent
    names = collections.Counter(p.name for p in root.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1], \
        f"test files sharing a name: {[n for n, c in names.items() if c > 1]}"
