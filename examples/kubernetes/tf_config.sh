#!/bin/sh
# TF_CONFIG for a pod of a StatefulSet (statefulset.yaml), from its ordinal: the pod named
# $STATEFULSET-3 is worker 3 of $REPLICAS, every worker reachable at its stable DNS name
# under the headless Service, $STATEFULSET-I.$SERVICE.$NAMESPACE.svc.cluster.local:$PORT.
# Then runs the command it is given (tessera train ... --resolver tf_config) with it.
set -eu
: "${HOSTNAME:?the pod name}" "${STATEFULSET:?}" "${SERVICE:?}" "${NAMESPACE:?}" "${REPLICAS:?}" "${PORT:?}"
ordinal=${HOSTNAME##*-}
case "$ordinal" in
  '' | *[!0-9]*) echo "tf_config.sh: pod name '$HOSTNAME' does not end in an ordinal" >&2; exit 1 ;;
esac
if [ "${HOSTNAME%-*}" != "$STATEFULSET" ] || [ "$ordinal" -ge "$REPLICAS" ]; then
  echo "tf_config.sh: pod '$HOSTNAME' is not one of $STATEFULSET-0 to $STATEFULSET-$((REPLICAS - 1))" >&2
  exit 1
fi
workers=""
i=0
while [ "$i" -lt "$REPLICAS" ]; do
  workers="$workers${workers:+, }\"$STATEFULSET-$i.$SERVICE.$NAMESPACE.svc.cluster.local:$PORT\""
  i=$((i + 1))
done
TF_CONFIG="{\"cluster\": {\"worker\": [$workers]}, \"task\": {\"type\": \"worker\", \"index\": $ordinal}}"
export TF_CONFIG
exec "$@"
