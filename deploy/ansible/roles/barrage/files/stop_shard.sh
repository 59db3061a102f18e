#!/bin/sh
# stop_shard.sh TOKEN: stops the processes of one barrage async job, those of this user whose
# environment holds BARRAGE_ANSIBLE_JOB=TOKEN (the playbook sets it on the job it launched;
# a process's environment is readable only by its own user, so no one else can mark or
# unmark one). SIGTERM first, so barrage ends its results file cleanly; SIGKILL after 10 s.
# Prints what it stopped (pid and command name: barrage, or the async job's python after
# barrage ended), nothing when none was running. Linux (/proc).
set -u
mark="BARRAGE_ANSIBLE_JOB=$1"
me=$(id -u)

marked() {
    found=
    for dir in /proc/[0-9]*; do
        pid=${dir#/proc/}
        [ "$pid" = "$$" ] && continue
        [ "$(stat -c %u "$dir" 2>/dev/null)" = "$me" ] || continue
        tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qxF "$mark" && found="$found $pid"
    done
    echo $found
}

pids=$(marked)
[ -z "$pids" ] && exit 0
for pid in $pids; do
    echo "stopping $pid ($(cat "/proc/$pid/comm" 2>/dev/null))"
done
kill -TERM $pids 2>/dev/null
tries=0
while [ -n "$(marked)" ] && [ "$tries" -lt 10 ]; do
    sleep 1
    tries=$((tries + 1))
done
left=$(marked)
if [ -n "$left" ]; then
    echo "killing $left"
    kill -KILL $left 2>/dev/null
fi
exit 0
