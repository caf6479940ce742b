#!/bin/sh
# Make a self-signed serving pair for gpuslice-webhook with openssl (when cert-manager is not
# used), and print the Secret and the caBundle for the MutatingWebhookConfiguration.
#
#   deploy/webhook/make-cert.sh [OUTDIR] [NAMESPACE] [SERVICE] [DAYS]
#   kubectl apply -f OUTDIR/secret.yaml
#   kubectl patch mutatingwebhookconfiguration gpuslice-webhook --type=json \
#     -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(cat OUTDIR/ca-bundle.b64)\"}]"
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
echo "wrote $out/tls.crt $out/tls.key $out/secret.yaml $out/ca-bundle.b64"
