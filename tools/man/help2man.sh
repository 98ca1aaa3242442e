#!/bin/sh
# Writes a manual page for a command from its --help text, at build time:
#   help2man.sh COMMAND NAME SECTION VERSION "SUMMARY" >NAME.SECTION
# The usage line becomes the synopsis; the rest is kept as it is printed,
# so the page always matches the binary.
set -eu
cmd=$1 name=$2 section=$3 version=$4 summary=$5
# Standard output only, whatever the exit status: a sanitizer build may
# report on stderr and exit non-zero after printing the help.
help=$("$cmd" --help 2>/dev/null) || true
[ -n "$help" ] || { echo "help2man.sh: $cmd --help printed nothing" >&2; exit 1; }
upper=$(printf '%s' "$name" | tr 'a-z' 'A-Z')
esc() { sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/' -e 's/-/\\-/g'; }
printf '.TH %s %s "" "rmqns %s" "System Administration"\n' "$upper" "$section" "$version"
printf '.SH NAME\n%s \\- %s\n' "$(printf '%s' "$name" | esc)" "$summary"
printf '.SH SYNOPSIS\n.nf\n'
printf '%s\n' "$help" | sed -n '1s/^usage: //p' | esc
printf '.fi\n.SH DESCRIPTION\n.nf\n'
printf '%s\n' "$help" | sed '1d' | esc
printf '.fi\n.SH SEE ALSO\n.BR rmqns (8)\n'
