"""The embedded model: its server processes (``local_model``, run as
``python -m harness.model.local_model``) and the Q8_0 weights it reads (``gguf_q8``).
Imports nothing else of harness.
"""
