module @jit_conv attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x9x8xf32>, %arg1: tensor<4x3x3x2xf32>, %arg2: tensor<1x5x5x4xf32>, %arg3: tensor<3x3x2x6xf32>, %arg4: tensor<2x6x3xf32>, %arg5: tensor<3x3x2xf32>, %arg6: tensor<2x7x7x3xf32>) -> (tensor<2x4x5x7xf32> {jax.result_info = "result[0]"}, tensor<1x5x5x6xf32> {jax.result_info = "result[1]"}, tensor<2x12x2xf32> {jax.result_info = "result[2]"}, tensor<2x4x4x3xf32> {jax.result_info = "result[3]"}, tensor<2x7x7x3xf32> {jax.result_info = "result[4]"}, tensor<2x6x3x3xf32> {jax.result_info = "result[5]"}, tensor<2x7x7x3xf32> {jax.result_info = "result[6]"}, tensor<2x7x7x3xf32> {jax.result_info = "result[7]"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 2], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x9x8xf32>, tensor<4x3x3x2xf32>) -> tensor<2x4x5x7xf32>
    %1 = stablehlo.convolution(%arg2, %arg3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x5x5x4xf32>, tensor<3x3x2x6xf32>) -> tensor<1x5x5x6xf32>
    %2 = stablehlo.convolution(%arg4, %arg5) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[2, 1]], lhs_dilate = [2], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x6x3xf32>, tensor<3x3x2xf32>) -> tensor<2x12x2xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %4 = "stablehlo.reduce_window"(%arg6, %3) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %13 = stablehlo.maximum %arg7, %arg8 : tensor<f32>
      stablehlo.return %13 : tensor<f32>
    }) : (tensor<2x7x7x3xf32>, tensor<f32>) -> tensor<2x4x4x3xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<f32>
    %6 = "stablehlo.reduce_window"(%arg6, %5) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 3, 1>, window_strides = array<i64: 1, 1, 2, 1>}> ({
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %13 = stablehlo.add %arg7, %arg8 : tensor<f32>
      stablehlo.return %13 : tensor<f32>
    }) : (tensor<2x7x7x3xf32>, tensor<f32>) -> tensor<2x6x3x3xf32>
    %7 = stablehlo.cosine %4 : tensor<2x4x4x3xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %8 = stablehlo.pad %arg6, %cst_1, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<2x7x7x3xf32>, tensor<f32>) -> tensor<2x9x9x3xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = "stablehlo.select_and_scatter"(%8, %7, %cst_2) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %13 = stablehlo.compare GE, %arg7, %arg8, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %13 : tensor<i1>
    }, {
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %13 = stablehlo.add %arg7, %arg8 : tensor<f32>
      stablehlo.return %13 : tensor<f32>
    }) : (tensor<2x9x9x3xf32>, tensor<2x4x4x3xf32>, tensor<f32>) -> tensor<2x9x9x3xf32>
    %10 = stablehlo.slice %9 [0:2, 1:8, 1:8, 0:3] : (tensor<2x9x9x3xf32>) -> tensor<2x7x7x3xf32>
    %11 = call @cumsum(%arg6) : (tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32>
    %12 = call @cumsum_1(%arg6) : (tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32>
    return %0, %1, %2, %4, %10, %6, %11, %12 : tensor<2x4x5x7xf32>, tensor<1x5x5x6xf32>, tensor<2x12x2xf32>, tensor<2x4x4x3xf32>, tensor<2x7x7x3xf32>, tensor<2x6x3x3xf32>, tensor<2x7x7x3xf32>, tensor<2x7x7x3xf32>
  }
  func.func private @cumsum(%arg0: tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32>
    return %0 : tensor<2x7x7x3xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [0, 0], [6, 0], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 7, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<2x7x7x3xf32>, tensor<f32>) -> tensor<2x7x7x3xf32>
    return %1 : tensor<2x7x7x3xf32>
  }
  func.func private @cumsum_1(%arg0: tensor<2x7x7x3xf32>) -> tensor<2x7x7x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [0, 6], [0, 0], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 7, 1, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<2x7x7x3xf32>, tensor<f32>) -> tensor<2x7x7x3xf32>
    return %1 : tensor<2x7x7x3xf32>
  }
}
