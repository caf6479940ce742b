#!/usr/bin/python3
"""Copy a .proto without its `service` blocks: protoc-c's service stubs are not used (the device
plugin calls and serves methods by path, src/deviceplugin/dp-grpc.c), and kubelet's
Registration.Register would become a C function pointer named `register`, a keyword."""
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
text = open(src, encoding='utf-8').read()
out = re.sub(r'^service\s+\w+\s*\{.*?^\}\s*$', '', text, flags=re.S | re.M)
open(dst, 'w', encoding='utf-8').write(out)
