"""The bundled P4Runtime target: a gRPC P4Runtime server that validates entities against
the P4Info the way BMv2/PI does and executes slicing.p4's pipeline in Python.

Run: ``PYTHONPATH=dataplane/bmv2 python -m bmv2_target --grpc-port 9559 --priority-queues 8``.
"""
