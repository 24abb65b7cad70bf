#!/bin/sh
# Test double standing in for haproxy in validator tests. It never checks the
# configuration; it records each run so that tests can observe timing,
# queueing, caching and clean-up:
#   FAKE_HAPROXY_LOG    file to append "start|child|end <epoch-ns|pid> ..." lines to
#   FAKE_HAPROXY_SLEEP  seconds to wait, in a child process, before finishing
#   FAKE_HAPROXY_EXIT   exit status (default 0)
#   FAKE_HAPROXY_SIGNAL signal to kill itself with instead of exiting
log=${FAKE_HAPROXY_LOG:-/dev/null}
files=$(find . -type f | sort | tr '\n' ' ')
tag=$(grep -m1 '^# tag ' haproxy.cfg | cut -d' ' -f3)
echo "start $(date +%s%N) $$ tag=$tag mode=$(stat -c %a .) args=$* files=$files" >>"$log"
if [ -n "$FAKE_HAPROXY_SLEEP" ]; then
  sleep "$FAKE_HAPROXY_SLEEP" &
  echo "child $!" >>"$log"
  wait $!
fi
echo "end $(date +%s%N) $$" >>"$log"
if [ -n "$FAKE_HAPROXY_SIGNAL" ]; then
  kill -s "$FAKE_HAPROXY_SIGNAL" $$
fi
if [ "${FAKE_HAPROXY_EXIT:-0}" = 0 ]; then
  echo "Configuration file is valid"
else
  echo "[ALERT]    ($$) : config : parsing [haproxy.cfg:1] : rejected by the test double" >&2
fi
exit "${FAKE_HAPROXY_EXIT:-0}"
