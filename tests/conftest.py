"""Shared test setup."""

import signal

# Tests that Ctrl-C a child program (test_files' ctrl_c, test_ui_live) need the child to get
# KeyboardInterrupt. A pytest started in the background by a non-interactive shell (`cmd &`,
# nohup, some CI wrappers) inherits SIGINT ignored, and so does every child, whose Python then
# installs no SIGINT handler: the child never sees the Ctrl-C and the test times out. With a
# handler installed here, children start with SIGINT at its default (exec resets handlers).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
