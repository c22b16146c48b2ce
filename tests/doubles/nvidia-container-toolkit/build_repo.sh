#!/bin/sh
# Builds a signed, flat apt repository of TEST-DOUBLE NVIDIA container toolkit packages laid out
# like NVIDIA's (<out>/stable/deb/<arch>/ plus <out>/gpgkey), so the nvidia_container_toolkit role
# exercises repo setup, signed-by, version pinning and holds without reaching NVIDIA.
# Usage: build_repo.sh OUT_DIR "VERSION..."   (needs dpkg-deb and gpg; no apt-utils)
set -eu
out="$1"; versions="$2"
here="$(cd "$(dirname "$0")" && pwd)"
arch="$(dpkg --print-architecture)"
repo="$out/stable/deb/$arch"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$repo"

package() {  # name version depends [file-in-/usr/bin source]
  name="$1"; version="$2"; depends="$3"; dir="$work/$name-$version"
  mkdir -p "$dir/DEBIAN" "$dir/usr/share/doc/$name"
  {
    echo "Package: $name"; echo "Version: $version-1"; echo "Architecture: $arch"
    echo "Maintainer: aiops.triton tests <tests@invalid>"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Description: TEST DOUBLE of NVIDIA's $name"
    echo " Built by tests/doubles/nvidia-container-toolkit/build_repo.sh; contains no NVIDIA code."
  } > "$dir/DEBIAN/control"
  echo "test double" > "$dir/usr/share/doc/$name/README.double"
  if [ $# -ge 5 ]; then
    mkdir -p "$dir/usr/bin"
    sed "s/@VERSION@/$version/" "$here/$5" > "$dir/usr/bin/$4"
    chmod 0755 "$dir/usr/bin/$4"
  fi
  dpkg-deb --root-owner-group -Zxz --build "$dir" "$repo/${name}_${version}-1_${arch}.deb" >/dev/null
}

for v in $versions; do
  package libnvidia-container1 "$v" ""
  package libnvidia-container-tools "$v" "libnvidia-container1 (>= $v-1)"
  package nvidia-container-toolkit-base "$v" "" nvidia-ctk nvidia-ctk.double
  package nvidia-container-toolkit "$v" "nvidia-container-toolkit-base (= $v-1), libnvidia-container-tools (>= $v-1)" \
    nvidia-container-runtime nvidia-container-runtime.double
done

cd "$repo"
: > Packages
for deb in *.deb; do
  dpkg-deb -f "$deb" >> Packages
  printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$deb" "$(stat -c %s "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" >> Packages
done
gzip -9kf Packages
{
  echo "Origin: aiops.triton test double"; echo "Label: nvidia-container-toolkit double"
  echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"; echo "SHA256:"
  for f in Packages Packages.gz; do
    printf ' %s %s %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "$f"
  done
} > Release

export GNUPGHOME="$work/gnupg"
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key 'aiops.triton test-double repo <tests@invalid>' rsa3072 sign never
gpg --batch --quiet --yes --clearsign -o InRelease Release
gpg --batch --quiet --yes --armor --export > "$out/gpgkey"
