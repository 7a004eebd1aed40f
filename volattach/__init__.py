"""volattach: the compute side of block-storage attachment, Nova-compatible.

Cross-cutting pieces live here: configuration (`conf`), the request context
(`context`), domain exceptions (`exception`), service versions (`version`),
the service runner (`service`) and the console scripts (`cmd`).
"""
import warnings

# oslo.messaging imports eventlet on import and warns that it is deprecated; this
# project never uses eventlet (threading executor only), so the warning is noise.
warnings.filterwarnings("ignore", message=r"\s*[Ee]ventlet is deprecated")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="eventlet")
