#!/usr/bin/env bash
# Builds segfs and mounts a data directory, ready to use:
#
#   bash scripts/run.sh [DATA_DIR [MOUNTPOINT]]
#
# DATA_DIR defaults to ~/.segfs/data and MOUNTPOINT to /mnt/segfs; both are
# created. The binary goes to ~/.segfs/bin/segfs, or to SEGFS_BIN. The
# mount runs in the background (its log is DATA_DIR/segfs-mount.out) until
# `umount MOUNTPOINT`; run again while it is up, it says so and exits 0.
# Set SEGFS_FOREGROUND=1 to keep it attached instead (Ctrl-C unmounts).
# Needs Go (/usr/local/go/bin is tried) and /dev/fuse; as root nothing
# else, as a user also fusermount3 (package fuse3).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

data=${1:-$HOME/.segfs/data}
mnt=${2:-/mnt/segfs}
bin=${SEGFS_BIN:-$HOME/.segfs/bin/segfs}

if [ ! -e /dev/fuse ]; then
	echo "run.sh: /dev/fuse is missing (try: modprobe fuse)" >&2
	exit 1
fi
mkdir -p "$data" "$mnt" "$(dirname "$bin")"

# Run twice: a segfs mount of this data directory already on the
# mountpoint is left as it is (mountinfo: mount point in field 5; after
# the "-", the type and the source, which is the data directory).
if awk -v m="$(realpath "$mnt")" -v d="$(realpath "$data")" '
	$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "fuse.segfs" && $(i + 2) == d) found = 1; break } }
	END { exit !found }' /proc/self/mountinfo; then
	echo "segfs is already mounted on $mnt (data in $data). Stop it with: umount $mnt"
	exit 0
fi

go build -o "$bin" .

if [ "${SEGFS_FOREGROUND:-}" = 1 ]; then
	exec "$bin" mount --foreground "$data" "$mnt"
fi
"$bin" mount "$data" "$mnt"
cat <<MSG
segfs is mounted on $mnt (data in $data, binary $bin). Try:
  mkdir $mnt/orders && seq 3 >> $mnt/orders/0/data && cat $mnt/orders/0/data
  cat $mnt/orders/0/status
Stop it with: umount $mnt
MSG
