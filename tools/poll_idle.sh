# Sourced by the benchmark scripts (`. tools/poll_idle.sh`), not run. With POLL_IDLE=1 (the
# default) a small background holder keeps /dev/cpu_dma_latency at 0 while the script runs, as
# tuned's latency-performance profile does: an idle core polls instead of halting, so a
# request's wake-up costs every server in the sitting the same few microseconds. On a VM whose
# halt costs a VM exit (cpuidle haltpoll with guest_halt_poll_ns 0) a one-connection round trip
# otherwise pays 50-60 µs of wake-up on each side, and 1-connection figures measure that
# (BENCHMARKS.md, "The ceiling of the wire, and a new machine's idle CPUs"). The holder, not
# the script, has the device open (servers the script starts do not inherit it) and ends
# within a second of the script. POLL_IDLE=0 leaves the machine as it is.
if [ "${POLL_IDLE:-1}" = 1 ]; then
  if [ -w /dev/cpu_dma_latency ]; then
    poll_idle_parent=$$
    (
      exec 9>/dev/cpu_dma_latency
      echo 0 >&9
      while kill -0 "$poll_idle_parent" 2>/dev/null; do sleep 1; done
    ) </dev/null >/dev/null 2>&1 &
    echo "idle CPUs poll for this run (/dev/cpu_dma_latency held at 0; POLL_IDLE=0 to leave them)" >&2
  else
    echo "cannot write /dev/cpu_dma_latency (not root?): idle CPUs as they are" >&2
  fi
fi
