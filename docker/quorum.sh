#!/bin/sh
# The `quorum` service: waits until the controllers have a leader and every broker is
# registered, prints `kraft quorum describe` and `kraft cluster info`, then stays up (so
# `docker compose up quorum` keeps the cluster running until Ctrl-C or `docker compose down`).
#   env: KRAFT_CONTROLLERS (host:port,...), KRAFT_BOOTSTRAP (brokers), KRAFT_BROKER_COUNT
set -eu
: "${KRAFT_CONTROLLERS:?}" "${KRAFT_BOOTSTRAP:?}" "${KRAFT_BROKER_COUNT:?}"
trap 'exit 0' TERM INT

echo "waiting for a quorum leader and $KRAFT_BROKER_COUNT registered brokers"
deadline=$(( $(date +%s) + ${KRAFT_WAIT_TIMEOUT:-300} ))
until status=$(kraft-healthcheck cluster "$KRAFT_CONTROLLERS" "$KRAFT_BOOTSTRAP" "$KRAFT_BROKER_COUNT" 2>&1); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "the cluster is not ready after ${KRAFT_WAIT_TIMEOUT:-300} s: $status" >&2
        exit 1
    fi
    sleep 1
done
echo "$status"
echo
echo "\$ kraft quorum describe --bootstrap-controller $KRAFT_CONTROLLERS"
kraft quorum describe --bootstrap-controller "$KRAFT_CONTROLLERS"
echo
echo "\$ kraft cluster info --bootstrap-server $KRAFT_BOOTSTRAP"
kraft cluster info --bootstrap-server "$KRAFT_BOOTSTRAP"
echo
echo "cluster ready; stop it with: docker compose down (add -v to delete its volumes)"
touch /tmp/ready
sleep infinity &
wait $!
