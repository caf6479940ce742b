/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's gRPC request messages (untrusted bytes): every DRA and registration request type of
 * both API versions is decoded by protobuf-c and re-encoded to exactly its packed size, with no
 * memory error (decoding the re-encoding is not required to succeed: protobuf-c accepts some
 * non-canonical inputs, e.g. a field number 0 written as a two-byte varint, that it then encodes in
 * a form it refuses).
 */
#include <stdint.h>
#include <stdlib.h>

#include "dra_v1.pb-c.h"
#include "dra_v1beta1.pb-c.h"
#include "pluginregistration_v1.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, size, data);
    if (!m)
        return;
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    if (protobuf_c_message_pack(m, buf) != n)
        abort();
    ProtobufCMessage *m2 = protobuf_c_message_unpack(desc, NULL, n, buf);
    free(buf);
    if (m2)
        protobuf_c_message_free_unpacked(m2, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    roundtrip(&k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__descriptor,
              data, size);
    roundtrip(&k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__descriptor,
              data, size);
    roundtrip(
        &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_request__descriptor,
        data, size);
    roundtrip(&k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__descriptor,
              data, size);
    roundtrip(&pluginregistration__registration_status__descriptor, data, size);
    roundtrip(&pluginregistration__info_request__descriptor, data, size);
    return 0;
}
