#!/usr/bin/env bash
# Detaches segfs FUSE mounts (type fuse.segfs) below DIR that killed tests
# left behind, so they cannot hang later tests or the removal of temp dirs:
#
#   bash scripts/unmount-leftovers.sh DIR          # dead mounts only
#   bash scripts/unmount-leftovers.sh --all DIR    # every segfs mount
#
# A dead mount is one whose daemon is gone (stat fails with "Transport
# endpoint is not connected", or "Software caused connection abort" for
# a request caught in flight when it died); nothing serves it, so detaching it takes
# nothing from anyone. A live mount below a shared directory such as /tmp
# may belong to another run on the same machine: detaching the mount of a
# soak running beside CI made that soak's writers fail with ENOENT (the
# path fell through to the empty mountpoint), twice, before this script
# existed. --all is for a directory the caller owns (.ci/run's own TMPDIR).
# Prints each mount it detaches.
set -uo pipefail

all=0
if [ "${1:-}" = "--all" ]; then
	all=1
	shift
fi
dir=${1:?usage: unmount-leftovers.sh [--all] DIR}
dir=${dir%/}

awk '$3 == "fuse.segfs" { print $2 }' /proc/self/mounts |
	while IFS= read -r m; do
		m=$(printf '%b' "$m") # /proc/mounts writes a space as \040
		case $m in "$dir"/*) ;; *) continue ;; esac
		if [ "$all" = 0 ]; then
			# A live daemon answers stat; a hung one is not ours to judge.
			err=$(timeout 5 stat -- "$m" 2>&1 >/dev/null) && continue
			case $err in *"not connected"* | *"connection abort"*) ;; *) continue ;; esac
		fi
		if umount -l "$m" 2>/dev/null; then
			echo "unmount-leftovers: detached $m"
		fi
	done
exit 0
