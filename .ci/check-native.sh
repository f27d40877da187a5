#!/usr/bin/env bash
# Fails when a package of the production dependency tree would need a native
# build (a binding.gyp, or an install script): the controller must install on
# gateways without compilers.
set -euo pipefail
cd "$(dirname "$0")/.."
# npm ls exits non-zero for a merely untidy tree but still lists it; a list
# without the project itself means npm could not read the tree at all, and a
# check that saw nothing must not pass
tree=$(npm ls --omit=dev --all --parseable 2>/dev/null || true)
if ! grep -qxF "$PWD" <<<"$tree"; then echo "npm ls could not list the production tree"; exit 1; fi
bad=0
while IFS= read -r dir; do
  [ "$dir" = "$PWD" ] && continue
  name=${dir#"$PWD"/node_modules/}
  if [ -f "$dir/binding.gyp" ]; then echo "native build: $name has binding.gyp"; bad=1; fi
  if node -e 'const s=require(process.argv[1]).scripts||{}; process.exit(["preinstall","install","postinstall"].some(k=>s[k])?0:1)' "$dir/package.json"; then
    echo "install script: $name"; bad=1
  fi
done <<<"$tree"
[ $bad -eq 0 ] && echo "production tree: no native builds, no install scripts"
exit $bad
