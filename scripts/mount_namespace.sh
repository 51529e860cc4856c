# Sourced by the tests that hide files from what they run (install_test.sh, wheel_install_test.sh):
# sets `ns` to the command that runs a program in a private mount namespace: root needs none but
# --mount; others map themselves to root in a user namespace. Empty when neither is allowed here.
ns=()
if unshare --mount true 2> /dev/null; then
  ns=(unshare --mount --propagation private)
elif unshare --user --map-root-user --mount true 2> /dev/null; then
  ns=(unshare --user --map-root-user --mount --propagation private)
fi
