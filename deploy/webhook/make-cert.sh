#!/bin/sh
# Make a self-signed serving pair for gpuslice-webhook with openssl (when cert-manager is not
# used), the Secret, and a JSON patch putting the caBundle into EVERY webhook of the
# MutatingWebhookConfiguration (pods, Volcano jobs, Volcano job deletions: the Volcano ones fail
# closed, so a webhook left without a caBundle blocks every Volcano job).
#
#   deploy/webhook/make-cert.sh [OUTDIR] [NAMESPACE] [SERVICE] [DAYS]
#   kubectl apply -f OUTDIR/secret.yaml
#   kubectl patch mutatingwebhookconfiguration gpuslice-webhook --type=json --patch-file OUTDIR/cabundle-patch.json
#
# The number of webhooks is read from mutatingwebhookconfiguration.yaml beside this script
# (GPUSLICE_WEBHOOKS=N overrides it). Rotation: run it again, apply both, and restart the webhook
# Deployment (kubectl rollout restart) so it serves the new pair.
set -eu
out=${1:-./gpuslice-webhook-tls}
ns=${2:-gpuslice-system}
svc=${3:-gpuslice-webhook}
days=${4:-365}
case "$days" in ''|*[!0-9]*) echo "make-cert.sh: DAYS must be a number, got \"$days\"" >&2; exit 2 ;; esac
mkdir -p "$out"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$out/tls.key" -out "$out/tls.crt" -days "$days" \
    -subj "/CN=$svc.$ns.svc" \
    -addext "subjectAltName=DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local" \
    -addext "extendedKeyUsage=serverAuth" >/dev/null 2>&1
base64 -w0 < "$out/tls.crt" > "$out/ca-bundle.b64"
cat > "$out/secret.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: $svc-tls
  namespace: $ns
type: kubernetes.io/tls
data:
  tls.crt: $(cat "$out/ca-bundle.b64")
  tls.key: $(base64 -w0 < "$out/tls.key")
YAML
# One "add" per webhook: add replaces an existing caBundle (RFC 6902 on an object member).
here=$(dirname "$0")
n=${GPUSLICE_WEBHOOKS:-$(grep -c '^  - name: ' "$here/mutatingwebhookconfiguration.yaml" 2>/dev/null || echo 0)}
case "$n" in ''|*[!0-9]*|0) echo "make-cert.sh: cannot count the webhooks of $here/mutatingwebhookconfiguration.yaml (set GPUSLICE_WEBHOOKS=N)" >&2; exit 2 ;; esac
bundle=$(cat "$out/ca-bundle.b64")
{
    printf '['
    i=0
    while [ "$i" -lt "$n" ]; do
        [ "$i" -gt 0 ] && printf ','
        printf '{"op":"add","path":"/webhooks/%d/clientConfig/caBundle","value":"%s"}' "$i" "$bundle"
        i=$((i + 1))
    done
    printf ']\n'
} > "$out/cabundle-patch.json"
echo "wrote $out/tls.crt $out/tls.key $out/secret.yaml $out/ca-bundle.b64 $out/cabundle-patch.json ($n webhooks)"
