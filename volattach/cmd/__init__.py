"""Console scripts: volattach-api, -conductor, -compute, -volume, -manage, -all."""
