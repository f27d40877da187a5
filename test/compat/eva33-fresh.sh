#!/usr/bin/env bash
# A fresh EVA ICS 3.3.2 controller folder holding calls.ts's SETUP, started:
#   test/compat/eva33-fresh.sh WORK [PORT]
# NOTIFIERS=DIR: the notifier files of DIR instead of SETUP's compat_db.json.
# WORK is the folder /work/shared/reference/eva33.sh set up (WORK/uc); its
# first state is kept as WORK/uc.pristine and restored on every run, so each
# recording starts from the same folder. Needs a build (dist/) for SETUP.
set -euo pipefail
W=${1:?WORK}; port=${2:-28812}
here=$(cd "$(dirname "$0")/../.." && pwd)
ref=/work/shared/reference/eva33.sh
bash "$ref" stop "$W" || true
sleep 1
[ -d "$W/uc.pristine" ] || cp -a "$W/uc" "$W/uc.pristine"
rm -rf "$W/uc" && cp -a "$W/uc.pristine" "$W/uc"
node -e '
const { SETUP } = require(process.argv[1] + "/dist/test/compat/calls.js");
const fs = require("fs"); const W = process.argv[2] + "/uc";
fs.writeFileSync(W + "/etc/uc_apikeys.ini", SETUP.keysIni);
fs.mkdirSync(W + "/xc/cmd", { recursive: true });
fs.writeFileSync(W + "/xc/cmd/compat_cmd", SETUP.cmdScript, { mode: 0o755 });
fs.mkdirSync(W + "/runtime/uc_notify.d", { recursive: true });
fs.writeFileSync(W + "/runtime/uc_notify.d/compat_db.json", JSON.stringify(SETUP.notifier, null, 4));
' "$here" "$W"
if [ -n "${NOTIFIERS:-}" ]; then
  rm -f "$W/uc/runtime/uc_notify.d/"*.json && cp "$NOTIFIERS"/*.json "$W/uc/runtime/uc_notify.d/"
fi
bash "$ref" start "$W" "$port"
