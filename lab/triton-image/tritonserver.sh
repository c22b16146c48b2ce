#!/bin/sh
# tritonserver with the argv shim preloaded: a restricted-API value "@/path" is read from that file
# (see argv_secret.c), so the repository-API key never appears in a command line.
LD_PRELOAD=/opt/tritonserver/lib/argv_secret.so exec /opt/tritonserver/bin/tritonserver.real \
  --backend-directory=/opt/tritonserver/backends "$@"
