{
  "targets": [
    {
      "target_name": "malloc_tuning",
      "sources": ["malloc-tuning.c"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
