#!/bin/sh
# /usr/bin/gpuviz: starts the bundled app installed in /opt/gpuviz.
exec /opt/gpuviz/gpuviz "$@"
