"""pytest prints one line per test as tests/run-all.sh counts them:
"ok python/NAME", "FAIL python/NAME: why" or "skip python/NAME: why"."""


def _label(nodeid):
    name = nodeid.split("::")[-1]
    return "python/" + (name[5:] if name.startswith("test_") else name).replace("_", "-")


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        label = _label(report.nodeid)
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            line = "skip %s: %s" % (label, reason.replace("Skipped: ", ""))
        elif report.passed:
            line = "ok " + label
        else:
            why = (report.longrepr.reprcrash.message if hasattr(report.longrepr, "reprcrash")
                   and report.longrepr.reprcrash else str(report.longrepr))
            line = "FAIL %s: %s" % (label, " ".join(str(why).split())[:400])
        print("\n" + line, flush=True)
