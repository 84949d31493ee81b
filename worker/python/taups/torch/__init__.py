"""taups.torch: tauPS as PyTorch modules.

  EmbeddingTable          one sparse table and the features in it
  EmbeddingBagCollection  pooled (sum / mean) lookups -> dict of (B, dim)
  EmbeddingCollection     unpooled lookups -> dict of JaggedEmbeddings
  JaggedFeatures          values + lengths/offsets per feature (torchrec's
                          KeyedJaggedTensor is accepted too)
  DenseParameters         nn.Parameters kept in a dense table
  step, training_step     end a step: pushes answered, the clock moved
  prefetch                a loader wrapper that pulls the next batch early
  worker_from_env, connect  worker id / count from torchrun's RANK /
                          WORLD_SIZE

Needs torch; importing taups alone never imports it.
"""

from taups.torch.dense import DenseParameters
from taups.torch.distributed import connect, worker_from_env
from taups.torch.embedding import (EmbeddingBagCollection,
                                   EmbeddingCollection, JaggedEmbeddings)
from taups.torch.jagged import JaggedFeatures
from taups.torch.prefetch import prefetch
from taups.torch.stats import TableStepStats
from taups.torch.step import StepStats, step, training_step
from taups.torch.table_spec import EmbeddingTable

__all__ = [name for name in dir() if not name.startswith("_")]
