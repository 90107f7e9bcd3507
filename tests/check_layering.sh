#!/usr/bin/env bash
# Fails if a file of a lower layer includes a header of a higher one (docs/style.md, "Layers point down").
set -u
root=${1:-.}
layers=(core runtime ir prims interp compiler backends transforms ops parallel random nn optim data io)
status=0
for i in "${!layers[@]}"; do
  low=${layers[$i]}
  for j in "${!layers[@]}"; do
    [ "$j" -le "$i" ] && continue
    high=${layers[$j]}
    hits=$(grep -rn "#include \"graft/$high/" "$root/graft/$low" 2>/dev/null)
    if [ -n "$hits" ]; then
      echo "layer '$low' must not include layer '$high':"
      echo "$hits"
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "layering ok: ${layers[*]}"
exit $status
