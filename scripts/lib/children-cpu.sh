# shellcheck shell=bash
# Sourced by the benchmark scripts, not run.
#
# children_cpu SCRATCH: prints the CPU seconds (user + system) used so far by the finished
# children of the calling shell, and everything they waited for, from bash's `times`.
# Call it as `children_cpu "$work/times" >FILE`, never inside `$( )` or a pipeline: there it
# would run in a subshell and count only the subshell's children. SCRATCH is a file it may
# overwrite (`times` must write to a file for the same reason).
children_cpu() {
    times >"$1"
    tail -1 "$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }; printf "%.2f\n", t }'
}
