#!/bin/sh
# A service manager of the tests' own, answering the systemctl verbs the agent speaks
# (src/agent/service-manager.ts) over the folder given first: units/<unit> holds the shell command
# the unit runs, run/<unit>.pid its process while it runs, enabled/<unit> marks it enabled, and
# journal/<unit> lists every start, stop, enable, disable and reload it was asked for.
dir=$1
shift
verb=$1
shift
if [ "$verb" = show ]; then unit=$3; else unit=$1; fi
pidfile="$dir/run/$unit.pid"
mkdir -p "$dir/run" "$dir/enabled" "$dir/journal"
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
journal() { echo "$1" >> "$dir/journal/$unit"; }
case "$verb" in
  show) if [ -f "$dir/units/$unit" ]; then echo loaded; else echo not-found; fi ;;
  is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
  is-enabled) if [ -f "$dir/enabled/$unit" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  start)
    [ -f "$dir/units/$unit" ] || { echo "Unit $unit not found." >&2; exit 5; }
    journal start
    running && exit 0
    setsid sh -c "$(cat "$dir/units/$unit")" > /dev/null 2>&1 < /dev/null &
    echo $! > "$pidfile" ;;
  stop)
    journal stop
    if running; then kill "$(cat "$pidfile")"; fi
    rm -f "$pidfile" ;;
  enable) journal enable; touch "$dir/enabled/$unit" ;;
  disable) journal disable; rm -f "$dir/enabled/$unit" ;;
  reload)
    running || { echo "$unit is not active, cannot reload." >&2; exit 7; }
    journal reload ;;
  *) echo "unknown verb $verb" >&2; exit 2 ;;
esac
