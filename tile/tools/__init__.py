"""Host-side tools for kernels (Triton's `triton.tools`): `tensor_descriptor.TensorDescriptor`."""
from . import tensor_descriptor

__all__ = ["tensor_descriptor"]
