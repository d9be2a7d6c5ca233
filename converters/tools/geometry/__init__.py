"""3D and CAD tools: meshes converted and previewed with trimesh (and a software renderer), DXF drawn with ezdxf."""

from converters.base import Tool
from converters.tools.geometry.cad import CadConvert
from converters.tools.geometry.convert import ModelConvert
from converters.tools.geometry.thumbnail import ModelThumbnail

TOOLS: list[Tool] = [ModelConvert(), ModelThumbnail(), CadConvert()]
