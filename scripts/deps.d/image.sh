# The image test (cmd/agenthost TestE2E_ImageServesARunWithAMountedPlugin) builds the
# Containerfile's image with podman and serves a run from it. The list is podman with the
# pieces Debian only recommends, named so that a --no-install-recommends install gets the
# same set the test was written against: both OCI runtimes (crun is podman's default; the
# test falls back to runc on a kernel whose cgroups are in hybrid mode, which crun
# refuses), conmon, netavark, aardvark-dns and iptables as the network stack (netavark
# runs iptables to set up the bridge network: without it no container starts, "netavark:
# No such file or directory"), catatonit for --init, fuse-overlayfs and uidmap for
# storage and user namespaces where the kernel's overlay or root is not available.
apt_install podman crun runc conmon netavark aardvark-dns iptables catatonit fuse-overlayfs uidmap slirp4netns
