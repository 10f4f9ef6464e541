#!/bin/sh
# ebb's image, built from nothing with buildah (`make image`): the binary,
# the shared libraries it links (as the dynamic loader resolves them here),
# the CA certificates, its Lua runtime and the examples. No shell, no
# package manager, no setuid file; runs as 65532:65532, the user deploy/'s
# manifests ask for, on a read-only root filesystem (it writes nothing).
#
#   deploy/image/build.sh ROOTFS IMAGE
#
# ROOTFS holds `make install DESTDIR=ROOTFS PREFIX=/usr` already (the
# Makefile's image target does that first). STORAGE_DRIVER picks buildah's
# storage (default vfs: works without overlay support).
set -eu
root=$1
image=$2
driver=${STORAGE_DRIVER:-vfs}
bin=$root/usr/bin/ebb

command -v buildah >/dev/null 2>&1 || {
    echo "make image: buildah is not installed (apt-get install buildah)" >&2
    exit 2
}
[ -x "$bin" ] || { echo "make image: $bin is missing (make install first)" >&2; exit 2; }

# Libraries at the path the loader looks in, with merged /usr: /lib and
# /lib64 are links to /usr/lib and /usr/lib64, as on Debian.
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
while read -r lib; do
    dir=$(readlink -f "$(dirname "$lib")")
    real=$(readlink -f "$lib")
    # the mode as installed (the loader itself must be executable)
    install -D -m "$(stat -c %a "$real")" "$real" "$root$dir/$(basename "$lib")"
done
[ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
[ -e "$root/lib64" ] || ln -s usr/lib64 "$root/lib64"
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
# who 65532 is (for libraries that ask), and nothing else
printf 'root:x:0:0::/nonexistent:/nonexistent\nnonroot:x:65532:65532::/nonexistent:/nonexistent\n' \
    >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
# no setuid or setgid bit anywhere
chmod -R u-s,g-s "$root"

c=$(buildah --storage-driver "$driver" from scratch)
trap 'buildah --storage-driver "$driver" rm "$c" >/dev/null 2>&1 || true' EXIT
buildah --storage-driver "$driver" copy --quiet "$c" "$root" / >/dev/null
buildah --storage-driver "$driver" config \
    --user 65532:65532 \
    --entrypoint '["/usr/bin/ebb"]' --cmd '["--help"]' \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --label org.opencontainers.image.title=ebb \
    --label "org.opencontainers.image.description=A Kubernetes descheduler with strategies in Lua" \
    --label "org.opencontainers.image.version=$("$bin" version | awk '{print $2}')" \
    "$c"
buildah --storage-driver "$driver" commit --quiet "$c" "$image" >/dev/null
echo "make image: $image ($(du -sk "$root" | awk '{print $1}') KiB)"
