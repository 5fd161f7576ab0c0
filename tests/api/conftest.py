"""tests/api: the coverage report goes into pytest's terminal summary."""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = getattr(config, "_nbtorch_api_coverage", None)
    if lines:
        terminalreporter.write_sep("-", "PyTorch API coverage (in-scope public names)")
        for line in lines:
            terminalreporter.write_line(line)
