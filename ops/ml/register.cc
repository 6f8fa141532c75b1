// The ai.onnx.ml family: classic machine-learning operators (encoders, linear models, SVMs,
// tree ensembles, map and sequence-of-map conversions).
#include "refeval/registry.h"

namespace refeval::ops {

void register_array_feature_extractor(Registry& reg);
void register_binarizer(Registry& reg);
void register_cast_map(Registry& reg);
void register_category_mapper(Registry& reg);
void register_dict_vectorizer(Registry& reg);
void register_feature_vectorizer(Registry& reg);
void register_imputer(Registry& reg);
void register_label_encoder(Registry& reg);
void register_linear_models(Registry& reg);
void register_normalizer(Registry& reg);
void register_one_hot_encoder(Registry& reg);
void register_scaler(Registry& reg);
void register_svm_classifier(Registry& reg);
void register_svm_regressor(Registry& reg);
void register_tree_ensemble(Registry& reg);
void register_tree_ensemble_legacy(Registry& reg);
void register_zip_map(Registry& reg);

void register_ml(Registry& reg) {
  register_array_feature_extractor(reg);
  register_binarizer(reg);
  register_cast_map(reg);
  register_category_mapper(reg);
  register_dict_vectorizer(reg);
  register_feature_vectorizer(reg);
  register_imputer(reg);
  register_label_encoder(reg);
  register_linear_models(reg);
  register_normalizer(reg);
  register_one_hot_encoder(reg);
  register_scaler(reg);
  register_svm_classifier(reg);
  register_svm_regressor(reg);
  register_tree_ensemble(reg);
  register_tree_ensemble_legacy(reg);
  register_zip_map(reg);
}

}  // namespace refeval::ops
