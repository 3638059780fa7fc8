"""The method and nothing else: Algorithm 1 and what it needs.

Each method is one :class:`~csd_lib.engine.methods.Method` in the registry (:mod:`~csd_lib.engine.methods`:
how to plan, run, price and label it); a :class:`~csd_lib.engine.plan.Plan` says what a generation runs
(method, drafters, K, lenience, draft-length policy: :mod:`~csd_lib.engine.policy` says how far each level drafts per
round: K as given, transformers' schedule, a confidence stop or the EWIF-best length);
:mod:`~csd_lib.engine.cascade` runs it with every level behind one drafter interface, deciding
acceptance only through :func:`~csd_lib.engine.review.review` (paper notation); Max-Gram
(:mod:`~csd_lib.engine.mag`) is the free bottom drafter; :class:`~csd_lib.engine.models.LM` is the one
model adapter (KV cache rolled back through the cache API); a generation returns a
:class:`~csd_lib.engine.generation.Generation` whose :class:`~csd_lib.engine.stats.Stats` count calls
and define SWI; :mod:`~csd_lib.engine.lenience` says which reviews of a plan are lenient. The tree methods
(:mod:`~csd_lib.engine.tree_methods`) have the target review a token tree in one call
(:mod:`~csd_lib.engine.tree`: the tree mask and the one tree review). The levels behind the drafter
interface are in :mod:`~csd_lib.engine.levels`; :mod:`~csd_lib.engine.inputs` checks a caller's family and
prompt before torch sees them; :mod:`~csd_lib.engine.prompts` holds the paper's prompt templates and turns
a prompt into token ids; :mod:`~csd_lib.engine.kvariants` derives K matrices from another (paper names,
the horizontal tail or MaG removed); :mod:`~csd_lib.engine.batch` generates many prompts at once, each row running
the batch-1 engine with its forward calls batched across rows. Nothing here loads a checkpoint, reads a file or times a benchmark.
"""
