"""prefetch(): iterate a data loader with the next batch's rows already on
their way.

    for batch in taups.torch.prefetch(loader, ebc, lambda b: b["sparse"]):
        with taups.torch.training_step(ebc, dense):
            loss = model(batch); loss.backward()

Before yielding batch t it draws batch t+1 from the loader and asks `module`
to prefetch its rows: an async table pulls them at once on a background
thread, so they travel while batch t computes; an ssp(s) table does the
same when the bound already allows step t+1 (every live worker's clock on
the shards is at least t+1-s: taups.torch.ssp_gate, one Stats call when
the last clocks seen do not tell), else when step t is clocked; sync and
semi_sync tables start the pull when step t is clocked (the rows of t+1
must include step t's update). The forward pass of t+1 then only waits for
what is left of that pull (StepStats wait_s; overlapped_pulls counts the
pulls that arrived during step t). Rows pulled early miss this worker's
own update of step t (one more unit of staleness on rows shared by
consecutive batches; tau reports it); under ssp that is within the bound,
which needs s >= 1 for any early pull.

Thread-compatible: one training thread drives the generator.
"""


def prefetch(batches, module, features_of=lambda batch: batch):
    """Yields the items of `batches` (any iterable) in order, each after the
    next one's rows were prefetched through `module` (an
    EmbeddingBagCollection or EmbeddingCollection). features_of(batch) gives
    the module's input for a batch; forward must be called with that same
    object (or one with the same ids)."""
    iterator = iter(batches)
    try:
        current = next(iterator)
    except StopIteration:
        return
    module.prefetch(features_of(current))
    while True:
        try:
            following = next(iterator)
        except StopIteration:
            yield current
            return
        module.prefetch(features_of(following))
        yield current
        current = following
