#!/bin/sh
# meson install's last step: the configuration in sysconfdir when there is
# none yet, and, on a real install (no DESTDIR) by root, the service's user
# from sysusers.d and the config directory handed to it (runtime updates
# rewrite rmqns.conf). With DESTDIR (packaging) only the file is placed; a
# package runs systemd-sysusers at its installation.
#   install.sh DATADIR CONFDIR SYSUSERS_FILE
set -eu
datadir=$1 confdir=$2 sysusers=$3
dest=${DESTDIR:-}
mkdir -p "$dest$confdir"
if [ ! -e "$dest$confdir/rmqns.conf" ]; then
	cp "$dest$datadir/rmqns.conf" "$dest$confdir/rmqns.conf"
	echo "rmqns: installed $confdir/rmqns.conf"
else
	echo "rmqns: kept the existing $confdir/rmqns.conf (the default is $datadir/rmqns.conf)"
fi
if [ -n "$dest" ] || [ "$(id -u)" != 0 ]; then
	echo "rmqns: create the service's user with: systemd-sysusers $sysusers; chown -R rmqns:rmqns $confdir"
	exit 0
fi
if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers "$sysusers"
fi
if id rmqns >/dev/null 2>&1; then
	chown rmqns:rmqns "$confdir" "$confdir/rmqns.conf"
else
	echo "rmqns: no user rmqns (systemd-sysusers missing): create it, then chown -R rmqns:rmqns $confdir"
fi
