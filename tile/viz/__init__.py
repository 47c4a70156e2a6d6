"""Pictures computed from tile's own objects: layouts (tile.viz.layout), shared-memory swizzles and
their bank conflicts (tile.viz.swizzle), the schedule of a software-pipelined loop
(tile.viz.timeline), how many programs of a kernel an SM holds (tile.viz.occupancy), and the
registers a kernel keeps through its loops unused (tile.viz.live_ranges). Each returns a figure that Jupyter shows as SVG, a terminal prints as text,
and `save` writes as .svg, .txt or (with matplotlib) .png."""
from .layout import LayoutFigure, SharedLayoutFigure, show_layout
from .live_ranges import LiveThroughFigure, LoopLiveness, live_through, show_live_through
from .occupancy import Occupancy, OccupancyFigure, occupancy, show_occupancy
from .picture import Figure, Picture
from .swizzle import SwizzleFigure, show_swizzle
from .timeline import PipelineFigure, show_pipeline

__all__ = ["show_layout", "show_swizzle", "show_pipeline", "show_occupancy", "occupancy", "show_live_through",
           "live_through", "LiveThroughFigure", "LoopLiveness", "LayoutFigure",
           "SharedLayoutFigure", "SwizzleFigure", "PipelineFigure", "OccupancyFigure", "Occupancy", "Figure", "Picture"]
