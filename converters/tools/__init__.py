"""One module per tool family; each exports ``TOOLS``, a list of tool instances."""
