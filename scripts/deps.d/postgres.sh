# store/postgres and the e2e tests on PostgreSQL: Debian's PostgreSQL 15 server binaries
# (the tests start their own server with initdb in a temporary directory, as the user
# nobody when they run as root). The package's own cluster is not started: a
# policy-rc.d refusing service starts is in place while it installs.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod +x "$policy"
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_install postgresql-15
  $SUDO rm -f "$policy"
  trap - EXIT
fi
